"""The data a tf2ir report draws: the TF, IR and ONNX graphs of one conversion, each node
with its details, grouped (name scopes, fusions, fallback segments, ranges of a big scope)
and linked across the views; built by tools/report.py from the pipeline's trace. The views'
data and groups are tools/report_layout.py; what a node shows, tools/report_nodes.py."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from tf2ir.tools.report_layout import CHUNK, _groups, _split_ranges, _Views  # noqa: F401
from tf2ir.tools.report_nodes import (TEXT_LIMIT, _attrs_text, _ir_attrs,  # noqa: F401
                                      _onnx_type, _owner, _segment_nodes, _short, _value_text,
                                      inner_nodes)


class GraphViews:
    """Builds the three views from what the pipeline's trace holds: `main` (the TF and IR
    graphs before the IR passes), then `onnx_view` once compiled."""

    def __init__(self, manager, trace: Dict[str, Any], attr_origins: Dict[str, Dict[str, tuple]]):
        self.manager = manager
        self.trace = trace
        self.attr_origins = attr_origins
        self.views = _Views()
        self._tf_ids: Dict[Tuple[int, str], List[int]] = {}
        self._ir_by_name: Dict[str, int] = {}
        self._locate = None
        self.tf_main = -1

    def main(self, front, converter, graph) -> None:
        """The TF graph as mapped, its IR graph and their function bodies, before the IR
        passes rewrite the graph (the ONNX names are located in it later)."""
        from tf2ir.ir.onnx.compile import ir_locator
        self.tf_main = self._tf_view(front.tf_graph, converter, graph, "", None, None,
                                     front.kept, front.segments)
        self._locate = ir_locator(graph)

    def find(self, view: str, op_type: str, cls: str) -> List[int]:
        return self.views.find(view, op_type, cls)

    def as_json(self) -> Dict[str, Any]:
        self.views.finish_links()
        return self.views.as_json()

    def apply_errors(self, verification: Dict[str, Any]) -> Dict[str, Any]:
        """Per-node error onto the TF (and IR) nodes; the first diverging node marked."""
        for name, row in verification["nodes"].items():
            for i in self._tf_ids.get((self.tf_main, name), []):
                node = self.views.nodes["tf"][i]
                node["err"] = row["rel"]
                node["d"]["error vs TF"] = (f"max abs {row['abs']:.3e}, max rel {row['rel']:.3e}"
                                            f"{'' if row['ok'] else ' (beyond tolerance)'}")
                if name == verification.get("first"):
                    node["cls"] = (node.get("cls", "") + " first").strip()
                    verification["first_id"] = i
            ir = self._ir_by_name.get(name)   # the IR node of the same name: its colour too
            if ir is not None and self.views.nodes["ir"][ir]["g"] == self.views.graphs[
                    self.tf_main].get("pair"):
                self.views.nodes["ir"][ir]["err"] = row["rel"]
        return {k: v for k, v in verification.items() if k != "nodes"}

    # -- the TF view ----------------------------------------------------------------------
    def _tf_view(self, tf_graph, converter, ir_graph, title: str, parent: Optional[int],
                 ir_parent: Optional[int], kept: Sequence[str] = (), segments: Sequence = (),
                 ) -> int:
        """The TF graph as shown: fused nodes expanded into the nodes they replaced (an
        outlined group), fallback segments as outlined groups of their nodes."""
        from tf2ir.parser.convert import PASSTHROUGH
        from tf2ir.parser.fallback import FALLBACK_OP
        manager = self.manager
        views = self.views
        g = views.new_graph("tf", title or "TF graph", parent)
        kept_set = set(kept) if kept else set(tf_graph.nodes)
        values = converter.values if converter is not None else {}
        segment_of = {s.name: s for s in segments}
        shown: Dict[str, int] = {}          # TF node name (as shown) → view node id
        ids_of: Dict[str, List[int]] = {}   # TF node name (after fusion) → view node ids
        edges: List[Tuple[str, Tuple[str, int], str]] = []   # (consumer, (producer, port))
        sink_of: Dict[str, str] = {}        # fused node → the inner node giving its output

        def add(node, cls: str, group: Optional[Tuple[str, str]], details: Dict[str, Any]) -> int:
            i = views.add_node("tf", g, node.name, node.op_type, cls, details, group)
            shown[node.name] = i
            return i

        for name, node in tf_graph.nodes.items():
            status = ""
            if name not in kept_set:
                status = "pruned"
            if node.op_type == FALLBACK_OP and name in segment_of:
                segment = segment_of[name]
                ids = []
                for inner in _segment_nodes(node):
                    i = add(inner, "fallback", ("fallback", name),
                            {"status": "run by TensorFlow (--fallback tf)", "segment": name,
                             "attributes": _attrs_text(inner)})
                    ids.append(i)
                    edges.extend((inner.name, t, "") for t in inner.inputs
                                 if t[0] in {n.name for n in _segment_nodes(node)})
                ids_of[name] = ids
                sink_of[name] = segment.nodes[-1] if segment.nodes else name
                for k, t in enumerate(segment.inputs):
                    edges.append((segment.nodes[0], t, ""))
                continue
            replaced = inner_nodes(node)
            if replaced:
                group = ("fusion", name)
                inner_names = {n.name for n in replaced}
                fused_details = {"fused by": f"scope fusion {node.pass_name}"
                                            + (f" ({node.description})" if node.description else ""),
                                 "fused into": f"{name} ({node.op_type})"}
                ids = [add(inner, " ".join(filter(None, ("fused", status, "const" if
                                                          inner.op_type == "Const" else ""))), group,
                           {**fused_details, "attributes": _attrs_text(inner)})
                       for inner in replaced]
                ids_of[name] = ids
                consumed = {s for n in replaced for s, _ in n.inputs}
                sink_of[name] = next((n.name for n in reversed(replaced) if n.name not in consumed),
                                     replaced[-1].name)
                for inner in replaced:
                    edges.extend((inner.name, t, "") for t in inner.inputs
                                 if t[0] in inner_names or t[0] in tf_graph.nodes)
                continue
            details: Dict[str, Any] = {}
            reg = manager.lookup(node.op_type, getattr(node, "framework", "TENSORFLOW"))
            if status == "pruned":
                details["status"] = "pruned: no output needs it"
            elif node.op_type in PASSTHROUGH:
                details["status"] = "dropped: its consumers read its input"
            elif node.op_type in ("Placeholder", "Const", "NoOp"):
                details["status"] = "converter: input, constant or no-op"
                status = "const" if node.op_type == "Const" else "input" \
                    if node.op_type == "Placeholder" else ""
            elif reg is None:
                status = "unsupported"
                problem = converter.unsupported.get(node.op_type) if converter else None
                details["status"] = "UNSUPPORTED: " + (problem.message if problem else
                                                        "no plugin maps this op type")
            elif (name, 0) not in values and converter is not None \
                    and node.op_type in converter.failures:
                status = "failed"
                problem = converter.failures[node.op_type]
                details["status"] = "FAILED: " + (str(problem.error) if problem.error
                                                   else problem.message)
            elif (name, 0) not in values and converter is not None \
                    and (converter.failures or converter.unsupported):
                status = "skipped"
                details["status"] = "not converted: an input could not be converted"
            if reg is not None:
                details["plugin"] = f"{reg.plugin} (priority {reg.priority})"
                details["IR op type"] = reg.ir_type
            details["attributes"] = _attrs_text(node)
            outputs, port = [], 0
            while (name, port) in values:   # as the IR describes the TF node's outputs
                outputs.append(f"{name}:{port}: {values[(name, port)].desc}")
                port += 1
            if outputs:
                details["outputs"] = outputs
            i = add(node, status, None, details)
            ids_of[name] = [i]
            edges.extend((name, t, "") for t in node.inputs)
        for consumer, (producer, port), _ in edges:
            if consumer not in shown:
                continue
            source = sink_of.get(producer, producer)
            if source not in shown:
                continue
            value = values.get((producer, port))
            views.add_edge(g, shown[source], shown[consumer],
                           str(value.desc) if value is not None else "",
                           value.desc.format if value is not None else "")
        for name, ids in ids_of.items():
            self._tf_ids[(g, name)] = ids
        for name, i in shown.items():
            self._tf_ids.setdefault((g, name), [i])
        ir, ir_ids = self._ir_view(ir_graph, title or "IR graph", ir_parent, tf_graph, ids_of,
                                   converter)
        views.graphs[g]["pair"] = ir
        views.graphs[ir]["pair"] = g
        for name, i in shown.items():   # a dropped Identity: the IR node giving its value
            value = values.get((name, 0)) if tf_graph.nodes.get(name) is not None and \
                tf_graph[name].op_type in PASSTHROUGH else None
            if value is not None and value.producer is not None \
                    and value.producer.name in ir_ids:
                views.link("tf", i, "ir", ir_ids[value.producer.name])
        self._nested(g, ir, ir_graph, ir_ids)
        return g

    def _nested(self, g: int, ir: int, ir_graph, ir_ids: Dict[str, int]) -> None:
        """If/While nodes: their bodies' TF graphs with their IR graphs, as nested graphs of
        both views."""
        bodies = self.trace.get("bodies", [])
        for node in ir_graph.nodes:
            for key, sub in node.subgraphs.items():
                tf_body = next((t for graph, t in bodies if graph is sub), None)
                if tf_body is None:
                    continue
                sub_g = self._tf_view(tf_body, None, sub, f"{node.name} · {key}", g, ir)
                for i in self._tf_ids.get((g, node.name), ()):
                    self.views.nodes["tf"][i].setdefault("sub", []).append([key, sub_g])
                self.views.nodes["ir"][ir_ids[node.name]].setdefault("sub", []).append(
                    [key, self.views.graphs[sub_g]["pair"]])

    # -- the IR view ----------------------------------------------------------------------
    def _ir_view(self, graph, title: str, parent: Optional[int], tf_graph, tf_ids,
                 converter) -> Tuple[int, Dict[str, int]]:
        manager = self.manager
        views = self.views
        g = views.new_graph("ir", title, parent)
        ids: Dict[int, int] = {}   # id(IR node or input Value) → view node id
        by_name: Dict[str, int] = {}
        origins = self.attr_origins if converter is not None else {}
        provenance = graph.provenance
        for value in graph.inputs:
            i = views.add_node("ir", g, value.name, "input", "input",
                               {"outputs": [_value_text(value)]})
            ids[id(value)] = i
            views.link_names(i, value.name, tf_ids)
        for node in graph.nodes:
            details: Dict[str, Any] = {}
            tf_name = _owner(node.name, tf_graph)
            tf_node = tf_graph[tf_name] if tf_name is not None else None
            if tf_node is not None and tf_name == node.name:
                details["origin op type"] = tf_node.op_type
                reg = manager.lookup(tf_node.op_type, getattr(tf_node, "framework", "TENSORFLOW"))
                plugin = provenance.get(node.name) or (reg.plugin if reg else "")
                if reg is not None:
                    details["plugin"] = f"{plugin} (priority {reg.priority}, {reg.imply})"
                if getattr(tf_node, "pass_name", ""):
                    details["fused by"] = f"scope fusion {tf_node.pass_name}"
            elif tf_name is not None:
                details["made by"] = f"the mapping of {tf_name}"
            details["attributes"] = _ir_attrs(node, origins.get(node.name),
                                              bool(getattr(tf_node, "pass_name", "")))
            details["inputs"] = [_value_text(v) if v is not None else "(absent)"
                                 for v in node.inputs]
            details["outputs"] = [_value_text(v) for v in node.outputs]
            cls = "const" if node.op_type == "Const" else ""
            i = views.add_node("ir", g, node.name, node.op_type, cls, details)
            ids[id(node)] = i
            by_name[node.name] = i
            self._ir_by_name.setdefault(node.name, i)
            if tf_name is not None:
                views.link_names(i, tf_name, tf_ids)
            for key, sub in node.subgraphs.items():
                if any(s is sub for s, _ in self.trace.get("bodies", [])):
                    continue   # a control-flow body: _nested_tf makes it with its TF graph
                sub_g, _ = self._ir_view(sub, f"{node.name} · {key}", g, tf_graph, tf_ids, None)
                views.nodes["ir"][i].setdefault("sub", []).append([key, sub_g])
        for node in graph.nodes:
            for value in node.inputs:
                if value is None:
                    continue
                source = value.producer if value.producer is not None else value
                if id(source) in ids:
                    views.add_edge(g, ids[id(source)], ids[id(node)], str(value.desc),
                                   value.desc.format)
        return g, by_name

    # -- the ONNX view --------------------------------------------------------------------
    def onnx_view(self, onnx_graph, title: str, parent: Optional[int]) -> int:
        from onnx import AttributeProto, helper
        views = self.views
        g = views.new_graph("onnx", title, parent)
        producer: Dict[str, int] = {}
        initializers = {t.name for t in onnx_graph.initializer}
        for value in onnx_graph.input:
            if value.name in initializers:
                continue
            i = views.add_node("onnx", g, value.name, "input", "input",
                               {"type": _onnx_type(value)})
            producer[value.name] = i
            self._link_onnx(i, value.name)
        types = {v.name: _onnx_type(v) for v in list(onnx_graph.value_info) + list(onnx_graph.output)}
        for node in onnx_graph.node:
            attrs = {}
            subs = []
            for attr in node.attribute:
                if attr.type == AttributeProto.GRAPH:
                    subs.append((attr.name, attr.g))
                    attrs[attr.name] = "(graph)"
                else:
                    attrs[attr.name] = _short(helper.get_attribute_value(attr))
            details = {"domain": node.domain or "ai.onnx", "attributes": attrs,
                       "inputs": [n + (f"  {types[n]}" if n in types else "") for n in node.input],
                       "outputs": [n + (f"  {types[n]}" if n in types else "") for n in node.output]}
            i = views.add_node("onnx", g, node.name or node.output[0], node.op_type, "", details)
            for name in node.input:
                if name in producer:
                    views.add_edge(g, producer[name], i, types.get(name, ""), "")
            for name in node.output:
                producer[name] = i
            self._link_onnx(i, node.name)
            for key, sub in subs:
                sub_g = self.onnx_view(sub, f"{node.name} · {key}", g)
                views.nodes["onnx"][i].setdefault("sub", []).append([key, sub_g])
        return g

    def _link_onnx(self, i: int, name: str) -> None:
        where = self._locate(name) if self._locate is not None else {}
        target = self._ir_by_name.get(where.get("node", ""))
        if target is not None:
            self.views.link("onnx", i, "ir", target)
