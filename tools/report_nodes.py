"""What a tf2ir report shows of a node (tools/report_views.py): the TF nodes a fused node or a
fallback segment stands for, the TF node an IR name comes from, attribute values as short
text (with where an IR attribute came from), and value and ONNX tensor types."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from tf2ir.ir.errors import ConversionError

TEXT_LIMIT = 160        # characters of an attribute value shown


def inner_nodes(node) -> List[Any]:
    """The original TF nodes a fused node replaced (a fused node fused again: its own)."""
    found = []
    for inner in getattr(node, "inner_nodes", ()) or ():
        found.extend(inner_nodes(inner) if getattr(inner, "inner_nodes", None) else [inner])
    return found


def _segment_nodes(node) -> List[Any]:
    """The nodes of a fallback segment, as TF nodes of its GraphDef (not its Placeholders)."""
    from tf2ir.parser.graph_view import TfNode
    inputs = set(getattr(node, "input_names", ()) or ())
    return [TfNode(n) for n in node.graph_def.node if n.name not in inputs]


def _owner(name: str, tf_graph) -> Optional[str]:
    """The TF node an IR node or value of this name comes from: the name itself, or the
    longest prefix ending before a '/' (a plugin's constants are NODE/hint)."""
    candidate = name
    while candidate:
        if candidate in tf_graph:
            return candidate
        candidate = candidate.rpartition("/")[0]
    return None


def _short(value: Any) -> str:
    import numpy as np
    if isinstance(value, np.ndarray):
        text = f"{value.dtype}{list(value.shape)}"
        if value.size <= 8:
            text += " " + np.array2string(value.reshape(-1), precision=4, separator=",")
        return text
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + "…"


def _attrs_text(node) -> Dict[str, str]:
    try:
        attrs = node.attrs
    except ConversionError as exc:
        return {"(error)": exc.message}
    return {k: _short(v) for k, v in attrs.items() if k != "_output_shapes"}


def _ir_attrs(node, auto: Optional[Dict[str, tuple]], fused: bool) -> Dict[str, str]:
    """Each attribute with where it came from: auto mapping (declared, converted), appended
    by auto mapping (not declared), computed by the parse function, or from a fusion."""
    out = {}
    for key, value in node.attrs.items():
        if auto and key in auto and auto[key][1] is value:
            how = "auto: " + auto[key][0]
        elif fused:
            how = "fusion"
        elif auto is not None:
            how = "computed"
        else:
            how = ""
        out[key] = _short(value) + (f"   [{how}]" if how else "")
    return out


def _value_text(value) -> str:
    return f"{value.name}: {value.desc}"


def _onnx_type(info) -> str:
    from onnx import TensorProto
    t = info.type.tensor_type
    if not info.type.HasField("tensor_type"):
        return ""
    dims = ",".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                    for d in t.shape.dim) if t.HasField("shape") else "*"
    return f"{TensorProto.DataType.Name(t.elem_type).lower()}[{dims}]"
