"""Writing a compiled graph at a target opset: every node (those of If/Loop bodies too) rewritten
from the canonical form the lowerings write into the target's form, by ir/onnx/forms.py's table."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

import numpy as np
import onnx
from onnx import helper

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.onnx.forms import OLDEST_OPSET, expand


def check_opset(opset: Optional[int]) -> None:
    """Refuse a target opset tf2ir cannot write (a usage error, exit status 2)."""
    if opset is None:
        return
    newest = onnx.defs.onnx_opset_version()
    if not OLDEST_OPSET <= opset <= newest:
        raise ConversionError(f"opset {opset} is not one tf2ir writes: choose {OLDEST_OPSET} "
                              f"to {newest} (the newest the installed onnx defines)",
                              exit_code=ExitStatus.USAGE)


Locate = Callable[[str], Dict[str, str]]


def to_target(nodes: List[onnx.NodeProto], target: int, initializers: Dict[str, np.ndarray],
              fresh: Callable[[str], str], locate: Optional[Locate] = None
              ) -> List[onnx.NodeProto]:
    """`nodes` in the form of opset `target` (new constants go into `initializers`); raises
    the forms' one-line ConversionError for a node the target cannot express, naming the
    node and op type that `locate` (compile.py's ir_locator) gives for the ONNX node's name
    (the IR node it was lowered from), else the ONNX node and op."""
    def fresh_const(array: np.ndarray) -> str:
        name = fresh("opset_const")
        initializers[name] = np.asarray(array)
        return name

    out: List[onnx.NodeProto] = []
    for node in nodes:
        attrs = {}
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                attr.g.CopyFrom(_graph_at(attr.g, target, initializers, fresh, locate))
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    sub.CopyFrom(_graph_at(sub, target, initializers, fresh, locate))
            attrs[attr.name] = helper.get_attribute_value(attr)
        try:
            forms = expand(node.op_type, node.domain, list(node.input), list(node.output),
                           attrs, target, initializers.get, fresh_const, fresh)
        except ConversionError as exc:
            where: Dict[str, Optional[str]] = dict(
                locate(node.name) if locate is not None and node.name else {}) or {
                "node": node.name or None, "op_type": node.op_type}
            exc.node, exc.op_type = where.get("node"), where.get("op_type")
            raise exc.located(plugin=where.get("plugin")) from None
        if len(forms) == 1 and forms[0][0] == node.op_type and forms[0][2] == list(node.input) \
                and forms[0][4] == attrs:
            out.append(node)
            continue
        for i, (op_type, domain, inputs, outputs, new_attrs) in enumerate(forms):
            out.append(helper.make_node(op_type, inputs, outputs,
                                        name=node.name if i == len(forms) - 1
                                        else fresh(f"{node.name}/{op_type}"),
                                        domain=domain or None, **new_attrs))
    return out


def _graph_at(graph: onnx.GraphProto, target: int, initializers: Dict[str, np.ndarray],
              fresh: Callable[[str], str], locate: Optional[Locate]) -> onnx.GraphProto:
    nodes = to_target(list(graph.node), target, initializers, fresh, locate)
    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    del copy.node[:]
    copy.node.extend(nodes)
    return copy
