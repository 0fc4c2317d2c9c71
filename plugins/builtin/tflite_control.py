"""Built-in TFLITE mappings of TFLite's control flow: WHILE and IF become the IR's While and If
(opp/control.py), whose cond/body and branches are the model's other subgraphs, converted
through the same plugins (`src.convert_function`, parser/tflite_view.py).

TFLite's resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, run once by
CALL_ONCE's init subgraph) keep state between invocations, which a converted graph cannot:
they are refused in one line naming the node.
"""

from tf2ir.ir import ConversionError
from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import tflite_op


def _outputs(src) -> int:
    return len(getattr(src, "output_tensors", None) or []) or 1


def _subgraph(src, option: str, descs):
    if not hasattr(src, "convert_function"):
        raise ConversionError(f"{src.op_type} needs its model's subgraphs (a TFLite view)")
    return src.convert_function(option, descs)


def parse_while(src, op) -> None:
    """The loop variables are the inputs and, at the end, the outputs."""
    descs = [op.input_desc(i) for i in range(len(op.inputs))]
    if _outputs(src) != len(descs):
        raise ConversionError(f"WHILE has {len(descs)} inputs but {_outputs(src)} outputs")
    op.num_outputs = len(descs)
    for key, option in (("cond", "cond_subgraph_index"), ("body", "body_subgraph_index")):
        op.set_attr(key, _subgraph(src, option, descs))


def parse_if(src, op) -> None:
    """Input 0 is the condition, the rest are both branches' inputs."""
    if not op.inputs:
        raise ConversionError("IF has no condition input")
    descs = [op.input_desc(i) for i in range(1, len(op.inputs))]
    op.num_outputs = _outputs(src)
    for key, option in (("then_branch", "then_subgraph_index"),
                        ("else_branch", "else_subgraph_index")):
        op.set_attr(key, _subgraph(src, option, descs))


def refuse_variables(src, op) -> None:
    raise ConversionError("TFLite resource variables (a stateful model: "
                          "VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE) are not "
                          "supported; convert the model with its variables frozen")


MAPPINGS = [
    tflite_op("While", "WHILE").parse_params_fn(parse_while),
    tflite_op("If", "IF").parse_params_fn(parse_if),
    tflite_op("Identity", "CALL_ONCE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE")
    .parse_params_fn(refuse_variables),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
