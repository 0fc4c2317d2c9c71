"""A TFLite subgraph as a graph view the one pipeline maps (DESIGN decision 11): nodes by
name, each an operator whose op type is its builtin name (CONV_2D) or custom code, keyed in
the plugin manager by framework TFLITE; Flex ops are the TF NodeDefs they hold (TENSORFLOW).

Tensors become edges. A subgraph input is a Placeholder node and a constant a Const node (its
value a view of the file), each named after its tensor, as is every model output, so the
written model's inputs and outputs keep TFLite's tensor names.

Quantized tensors (DESIGN decision 11: QDQ). Every operator computes in float. A quantized
tensor T an operator outputs is that float result quantized by a `TFLiteQuantize` node named
T, then dequantized by a `TFLiteDequantize` node named "T/dequantize", which is what T's
consumers read; a quantized input or constant is dequantized the same way. Both synthetic
nodes carry `scale`, `zero_point`, `axis` and `dtype` (the quantized type) and are mapped by
TFLITE plugins like any operator, so onnxruntime sees QuantizeLinear/DequantizeLinear pairs
around float ops and runs its int8 kernels.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.parser.graph_view import TfGraph
from tf2ir.parser.tflite_model import OperatorInfo, SubgraphInfo, TensorInfo, TfLiteModel
from tf2ir.plugins.registry import TFLITE

QUANTIZE, DEQUANTIZE = "TFLiteQuantize", "TFLiteDequantize"
Key = Tuple[str, int]
MAX_NESTING = 64   # WHILE/IF subgraphs within each other


class TfLiteNode:
    """One node of a TFLite graph view: what a TFLITE plugin's parse function gets as `src`
    (the `tf2ir.plugins.tfnode.TfNode` protocol), plus the TFLite tensors themselves."""

    framework = TFLITE

    def __init__(self, name: str, op_type: str, inputs: List[Key], attrs: Dict[str, Any],
                 operator: Optional[OperatorInfo] = None,
                 input_tensors: Sequence[Optional[TensorInfo]] = (),
                 output_tensors: Sequence[TensorInfo] = (),
                 input_positions: Sequence[Optional[int]] = ()):
        self.name, self.op_type = name, op_type
        self.inputs: List[Key] = list(inputs)
        self.control_inputs: List[str] = []
        self.device = ""
        self._attrs = attrs
        self.operator = operator
        # The operator's TFLite input tensors in schema order (None: an optional input left
        # out), its output tensors, and for each schema input its index in `inputs` (None
        # where left out): a plugin of an op with optional inputs reads positions here.
        self.input_tensors: List[Optional[TensorInfo]] = list(input_tensors)
        self.output_tensors: List[TensorInfo] = list(output_tensors)
        self.input_positions: List[Optional[int]] = list(input_positions)
        self.view: Optional["TfLiteGraph"] = None

    @property
    def attrs(self) -> Dict[str, Any]:
        return self._attrs

    def attr(self, name: str, default: Any = None) -> Any:
        return self._attrs.get(name, default)

    def attr_type(self, name: str) -> Optional[str]:
        return None    # TFLite options have no TF attribute kind

    def has_attr(self, name: str) -> bool:
        return name in self._attrs

    def convert_subgraph(self, index: int, input_descs) -> Any:
        """The IR graph of subgraph `index` of this node's model (a WHILE's cond or body, an
        IF's branches), converted through the same plugins: one input per desc."""
        if self.view is None:
            raise ConversionError("TFLite subgraphs are converted by a pipeline")
        return self.view.convert_subgraph(index, input_descs)

    def convert_function(self, attr: str, input_descs) -> Any:
        """The IR graph of the subgraph whose index option `attr` holds (FunctionalTfNode)."""
        index = self.attr(attr)
        if not isinstance(index, int):
            raise ConversionError(f"option '{attr}' does not name a subgraph")
        return self.convert_subgraph(index, input_descs)

    def __repr__(self) -> str:
        return f"<TfLiteNode {self.op_type} '{self.name}'>"


def quant_attrs(tensor: TensorInfo) -> Dict[str, Any]:
    q = tensor.quantization
    return {"scale": q.scale, "zero_point": q.zero_point, "axis": q.axis, "dtype": tensor.dtype,
            "tensor": tensor.name}


def is_quantized(tensor: TensorInfo) -> bool:
    """Whether the view puts Quantize/Dequantize nodes at `tensor`: integer data with scales."""
    return (tensor.quantization is not None
            and tensor.dtype in ("int8", "uint8", "int16", "int32", "int64"))


def step_sizes(sg: SubgraphInfo) -> Dict[str, float]:
    """Tensor name → the real size of one quantization step: a per-tensor quantized
    tensor's scale, and for a DEQUANTIZE's float output the scale of the tensor it
    dequantized (what verify, the zoo and the conformance suite count steps in)."""
    sizes: Dict[str, float] = {}
    for t in sg.tensors:
        if is_quantized(t) and t.quantization.scale.size == 1:
            sizes[t.name] = float(t.quantization.scale[0])
    for op in sg.operators:
        if op.op_type == "DEQUANTIZE" and op.inputs and op.outputs and op.inputs[0] >= 0 \
                and op.outputs[0] >= 0 and sg.tensors[op.inputs[0]].name in sizes:
            sizes[sg.tensors[op.outputs[0]].name] = sizes[sg.tensors[op.inputs[0]].name]
    return sizes


def output_step_sizes(path: str) -> Dict[str, float]:
    """step_sizes of the outputs of the first subgraph of the .tflite at `path`."""
    from tf2ir.parser.tflite_model import read_tflite
    sg = read_tflite(path).subgraphs[0]
    sizes = step_sizes(sg)
    names = [sg.tensors[i].name for i in sg.outputs]
    return {name: sizes[name] for name in names if name in sizes}


class TfLiteGraph(TfGraph):
    """One subgraph of a TFLite model as a graph view (see the module's text)."""

    framework = TFLITE

    def __init__(self, model: TfLiteModel, subgraph: int = 0, name: Optional[str] = None,
                 arguments: bool = False):
        """`arguments`: the subgraph is a body (WHILE, IF): its inputs are the pipeline's
        function arguments, named by their tensors."""
        self.model = name or model.path
        self.tflite = model
        self.subgraph: SubgraphInfo = model.subgraphs[subgraph]
        self.nodes: Dict[str, Any] = {}
        self.library = None
        self.pipeline = None
        self._names: set = set()
        self._float: Dict[int, Key] = {}     # tensor → what float consumers read
        self._raw: Dict[int, Key] = {}       # tensor → its value as TFLite holds it
        self.argument_names: List[str] = []
        self.calling: frozenset = frozenset()   # the subgraphs whose conversion this is within
        self._build(arguments)

    # -- building ------------------------------------------------------------------------
    def _unique(self, name: str) -> str:
        base, n = name, 1
        while name in self._names:
            name, n = f"{base}_{n}", n + 1
        self._names.add(name)
        return name

    def _add(self, node) -> Any:
        if isinstance(node, TfLiteNode):   # a Flex op's TF node converts no subgraph
            node.view = self
        self.nodes[node.name] = node
        return node

    def _synthetic(self, name: str, op_type: str, inputs: List[Key], attrs) -> str:
        node = TfLiteNode(self._unique(name), op_type, inputs, attrs)
        self._add(node)
        return node.name

    def _settle(self, tensor: TensorInfo, raw: Key) -> None:
        """Record where `tensor`'s value is; a quantized one is dequantized for its readers."""
        self._raw[tensor.index] = raw
        if is_quantized(tensor):
            dq = self._synthetic(f"{tensor.name}/dequantize", DEQUANTIZE, [raw], quant_attrs(tensor))
            self._float[tensor.index] = (dq, 0)
        else:
            self._float[tensor.index] = raw

    def _source(self, tensor: TensorInfo, op_type: str, attrs) -> None:
        name = self._synthetic(tensor.name, op_type, [], attrs)
        self._settle(tensor, (name, 0))

    def _build(self, arguments: bool) -> None:
        sg = self.subgraph
        tensors = sg.tensors
        for index in sg.inputs:
            t = tensors[index]
            if t.dtype is None:
                raise ConversionError(f"input '{t.name}' has a type tf2ir does not support "
                                      "(INT4)", model=self.model)
            self._source(t, "Placeholder", {"dtype": t.dtype, "shape": t.shape})
            self.argument_names.append(self._raw[index][0])
        produced = {o for op in sg.operators for o in op.outputs if o >= 0}
        for op in sg.operators:
            for index in op.inputs:
                if index < 0 or index in self._raw:
                    continue
                if index in produced:   # TFLite runs its operators in their order
                    raise ConversionError(
                        f"operator {op.index} ({op.op_type}) reads tensor "
                        f"'{tensors[index].name}' before any operator computes it (operators "
                        "out of order, or a cycle)", model=self.model, op_type=op.op_type)
                self._constant(tensors[index], op)
            self._operator(op)
        self.outputs_default: List[Key] = []
        for index in sg.outputs:
            if index not in self._raw:
                t = tensors[index]
                if t.data is None:
                    raise ConversionError(f"output '{t.name}' is neither computed nor a constant",
                                          model=self.model)
                self._constant(t, None)
            self.outputs_default.append(self._output_key(index))

    def _constant(self, t: TensorInfo, op: Optional[OperatorInfo]) -> None:
        if t.sparse:
            raise ConversionError(f"constant '{t.name}' is stored sparse, which tf2ir does not "
                                  "read", model=self.model, node=t.name,
                                  op_type=op.op_type if op else None)
        if t.data is None:
            # a variable starts at zeros; a constant of no elements has an empty buffer
            # (TF's converter writes RESHAPE's shape [] for a scalar so)
            if (t.shape is not None and None not in t.shape and t.dtype
                    and (t.is_variable or 0 in t.shape)):
                import math

                import numpy as np
                from tf2ir.parser.attrs import max_tensor_bytes, size_text
                from tf2ir.parser.tflite_model import _NUMPY
                dtype = np.dtype(_NUMPY.get(t.dtype, np.float32))
                nbytes = math.prod(t.shape) * dtype.itemsize
                if nbytes > max_tensor_bytes():   # a crafted variable's shape
                    raise ConversionError(f"variable '{t.name}' of shape {list(t.shape)} would "
                                          f"take {size_text(nbytes)}, more than the limit on "
                                          f"materialised tensors ({size_text(max_tensor_bytes())})",
                                          model=self.model, node=t.name)
                value = np.zeros(t.shape, dtype)
                if t.is_variable and t.dtype == "int8" and t.quantization is not None:
                    # TFLite resets an int8 variable to its zero point (real 0.0)
                    value[...] = t.quantization.zero_point.reshape(-1)[0]
                self._source(t, "Const", {"dtype": t.dtype, "value": value})
                return
            raise ConversionError(f"tensor '{t.name}' is read by operator {op.index if op else '?'} "
                                  f"({op.op_type if op else '?'}) but nothing computes it and it "
                                  "holds no data", model=self.model, node=t.name)
        self._source(t, "Const", {"dtype": t.dtype, "value": t.data})

    def _operator(self, op: OperatorInfo) -> None:
        tensors = self.subgraph.tensors
        inputs: List[Key] = []
        positions: List[Optional[int]] = []
        for index in op.inputs:
            if index < 0:
                positions.append(None)
                continue
            positions.append(len(inputs))
            inputs.append(self._float[index])
        outs = [tensors[i] for i in op.outputs if i >= 0]
        first = outs[0].name if outs else f"{op.op_type}_{op.index}"
        quantized = outs and is_quantized(outs[0])
        name = self._unique(f"{first}/{op.op_type}" if quantized or first in self._names else first)
        if op.op_type.startswith("Flex") and not op.builtin:
            from tf2ir.parser.tflite_flex import flex_node
            node = flex_node(op, name, inputs, self.model)
        else:
            attrs = dict(op.options)
            if not op.builtin and op.custom_options is not None:
                attrs.update(custom_attrs(op.custom_options))
            node = TfLiteNode(name, op.op_type, inputs, attrs, op,
                              [tensors[i] if i >= 0 else None for i in op.inputs], outs, positions)
        self._add(node)
        for port, t in enumerate(outs):
            if is_quantized(t):
                q = self._synthetic(t.name, QUANTIZE, [(name, port)], quant_attrs(t))
                self._settle(t, (q, 0))
            else:
                self._raw[t.index] = self._float[t.index] = (name, port)

    def _output_key(self, index: int) -> Key:
        """The node whose port 0 is output tensor `index`, named after it: an Identity
        (passed through when mapped) where the tensor is another port of an operator."""
        t = self.subgraph.tensors[index]
        key = self._raw[index]
        if key[1] == 0 and key[0] == t.name:
            return key
        name = self._synthetic(t.name, "Identity", [key], {})
        return (name, 0)

    # -- what the pipeline asks ------------------------------------------------------------
    def bind(self, pipeline) -> None:
        self.pipeline = pipeline

    def output_tensors(self, requested: Sequence[str] = ()) -> List[Key]:
        """The model's outputs, or the requested tensors by their TFLite names."""
        if not requested:
            if not self.outputs_default:
                raise ConversionError("the TFLite subgraph has no outputs", model=self.model)
            return list(self.outputs_default)
        by_name = {t.name: t.index for t in self.subgraph.tensors}
        found = []
        for name in requested:
            if name not in by_name or by_name[name] not in self._raw:
                raise ConversionError(f"output '{name}' is not a tensor of the TFLite model",
                                      model=self.model, exit_code=ExitStatus.USAGE)
            found.append(self._output_key(by_name[name]))
        return found

    def convert_subgraph(self, index: int, input_descs):
        if not 0 <= index < len(self.tflite.subgraphs):
            raise ConversionError(f"subgraph {index} does not exist", model=self.model)
        if self.pipeline is None:
            raise ConversionError("TFLite subgraphs are converted by a pipeline", model=self.model)
        calling = self.calling | {self.subgraph.index}
        if index in calling:   # a WHILE/IF whose body holds (or is) the caller itself
            raise ConversionError(f"subgraph {index} calls itself (a cycle of subgraphs)",
                                  model=self.model)
        if len(calling) >= MAX_NESTING:   # each level is a Python stack frame or more
            raise ConversionError(f"subgraphs nested deeper than {MAX_NESTING}", model=self.model)
        body = TfLiteGraph(self.tflite, index, self.model, arguments=True)
        body.calling = calling
        body.bind(self.pipeline)
        if len(input_descs) != len(body.argument_names):
            raise ConversionError(f"subgraph {index} takes {len(body.argument_names)} inputs, "
                                  f"given {len(input_descs)}", model=self.model)
        arguments = list(zip(body.argument_names, input_descs))
        return self.pipeline.convert_tflite_subgraph(body, arguments)


def custom_attrs(data: bytes) -> Dict[str, Any]:
    """A custom op's options: the bytes as `custom_options`, and where they are a flexbuffer
    map (TFLite_Detection_PostProcess's), its entries."""
    attrs: Dict[str, Any] = {"custom_options": data}
    try:
        from flatbuffers import flexbuffers
        decoded = flexbuffers.Loads(data)
    except Exception:   # not a flexbuffer: the plugin reads the bytes itself
        return attrs
    if isinstance(decoded, dict):
        attrs.update({str(k): v for k, v in decoded.items() if str(k) != "custom_options"})
    return attrs


def read_tflite_view(path: str, signature: Optional[str] = None) -> TfLiteGraph:
    """A .tflite file → the graph view of its signature's subgraph (`signature`, else
    serving_default, else the first signature, else subgraph 0)."""
    from tf2ir.parser.tflite_model import read_tflite
    return tflite_view_of(read_tflite(path), signature)


def tflite_view_of(model: TfLiteModel, signature: Optional[str] = None) -> TfLiteGraph:
    """The graph view of a model read (a file's, or bytes given to tf2ir.convert): its
    signature's subgraph, as read_tflite_view chooses it."""
    return TfLiteGraph(model, signature_subgraph(model, signature)[0])


def signature_subgraph(model: TfLiteModel, signature: Optional[str] = None):
    """(subgraph index, SignatureInfo or None) of `signature`, else serving_default, else the
    first signature, else subgraph 0 (no signature); an unknown signature is a usage error."""
    path = model.path
    if model.signatures:
        keys = [s.key for s in model.signatures]
        if signature is not None and signature not in keys:
            raise ConversionError(f"signature '{signature}' is not in the model (it has "
                                  f"{', '.join(keys)})", model=path, exit_code=ExitStatus.USAGE)
        wanted = model.signatures[keys.index(
            signature or ("serving_default" if "serving_default" in keys else keys[0]))]
        return wanted.subgraph, wanted
    if signature not in (None, "serving_default"):
        raise ConversionError(f"signature '{signature}' is not in the model (it has none)",
                              model=path, exit_code=ExitStatus.USAGE)
    return 0, None
