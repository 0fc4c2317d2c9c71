"""The data a tf2ir report draws: the TF, IR and ONNX graphs of one conversion, each node
with its details, grouped (name scopes, fusions, fallback segments, ranges of a big scope)
and linked across the views; built by tools/report.py from the pipeline's trace."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError

CHUNK = 120             # a group with more children is split into ranges of this many
TEXT_LIMIT = 160        # characters of an attribute value shown


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
            reg = manager.lookup(node.op_type)
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
                reg = manager.lookup(tf_node.op_type)
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


# -- the views' data -----------------------------------------------------------------------
class _Views:
    """Nodes of the three views (one id space per view, over all its graphs), the graphs
    (each a list of node ids with groups and edges) and the links between views."""

    def __init__(self):
        self.nodes: Dict[str, List[Dict[str, Any]]] = {"tf": [], "ir": [], "onnx": []}
        self.graphs: List[Dict[str, Any]] = []
        self._links: List[Tuple[str, int, str, int]] = []
        self._group_keys: Dict[int, Dict[int, Optional[Tuple[str, str]]]] = {}

    def new_graph(self, view: str, title: str, parent: Optional[int]) -> int:
        self.graphs.append({"view": view, "title": title, "parent": parent, "nodes": [],
                            "edges": []})
        self._group_keys[len(self.graphs) - 1] = {}
        return len(self.graphs) - 1

    def add_node(self, view: str, g: int, name: str, op: str, cls: str,
                 details: Dict[str, Any], group: Optional[Tuple[str, str]] = None) -> int:
        i = len(self.nodes[view])
        node = {"n": name, "op": op, "g": g, "d": details}
        if cls:
            node["cls"] = cls
        self.nodes[view].append(node)
        self.graphs[g]["nodes"].append(i)
        self._group_keys[g][i] = group
        return i

    def add_edge(self, g: int, a: int, b: int, label: str, fmt: str) -> None:
        edge = [a, b, label]
        if fmt and fmt != "ND":
            edge.append(fmt)
        self.graphs[g]["edges"].append(edge)

    def link(self, view_a: str, a: int, view_b: str, b: int) -> None:
        self._links.append((view_a, a, view_b, b))

    def link_names(self, ir_id: int, tf_name: str, tf_ids: Dict[str, List[int]]) -> None:
        """The IR node `ir_id` ↔ the TF view nodes of TF node `tf_name` (after fusion)."""
        for t in tf_ids.get(tf_name, ()):
            self.link("ir", ir_id, "tf", t)

    def find(self, view: str, op_type: str, cls: str) -> List[int]:
        return [i for i, n in enumerate(self.nodes[view])
                if n["op"] == op_type and cls in n.get("cls", "").split()][:20]

    def finish_links(self) -> None:
        """Each node's links to the other views (both ways; TF↔ONNX through the IR)."""
        nodes = self.nodes
        for view_a, a, view_b, b in self._links:
            nodes[view_a][a].setdefault(view_b, []).append(b)
            nodes[view_b][b].setdefault(view_a, []).append(a)
        for ir in nodes["ir"]:
            for t in ir.get("tf", ()):
                for o in ir.get("onnx", ()):
                    nodes["tf"][t].setdefault("onnx", []).append(o)
                    nodes["onnx"][o].setdefault("tf", []).append(t)
        for view in nodes.values():
            for node in view:
                for key in ("tf", "ir", "onnx"):
                    if key in node:
                        node[key] = sorted(set(node[key]))

    def as_json(self) -> Dict[str, Any]:
        for g, graph in enumerate(self.graphs):
            view = graph["view"]
            graph["groups"] = _groups(self.nodes[view], graph["nodes"], self._group_keys[g])
        return {"nodes": self.nodes, "graphs": self.graphs}


def _groups(nodes: List[Dict[str, Any]], ids: List[int],
            keys: Dict[int, Optional[Tuple[str, str]]]) -> List[Dict[str, Any]]:
    """The graph's groups: name scopes (a scope with one child is dissolved, a chain of
    scopes with one subscope each is one group), fusion and fallback groups, and ranges
    that split a group of more than CHUNK children. Sets each node's "p" (its group)."""
    groups: List[Dict[str, Any]] = []
    index: Dict[Tuple, int] = {}

    def group(path: Tuple, kind: str, label: str, parent: int) -> int:
        if path not in index:
            index[path] = len(groups)
            groups.append({"label": label, "kind": kind, "parent": parent, "kids": [], "nodes": []})
            if parent >= 0:
                groups[parent]["kids"].append(index[path])
        return index[path]

    def scope_group(parts: Sequence[str]) -> int:
        parent = -1
        for k in range(1, len(parts) + 1):
            parent = group(("scope",) + tuple(parts[:k]), "scope", "/".join(parts[:k]), parent)
        return parent

    special: Dict[Tuple[str, str], List[int]] = {}
    for i in ids:
        key = keys.get(i)
        if key is not None:
            special.setdefault(key, []).append(i)
    placed = set()
    for (kind, name), members in special.items():
        scopes = [nodes[i]["n"].split("/")[:-1] for i in members]
        common = os.path.commonprefix(scopes) if scopes else []
        parent = scope_group(common)
        gi = group((kind, name), kind, name, parent)
        groups[gi]["nodes"].extend(members)
        placed.update(members)
    for i in ids:
        if i not in placed:
            parts = nodes[i]["n"].split("/")[:-1]
            gi = scope_group(parts) if parts else -1
            if gi >= 0:
                groups[gi]["nodes"].append(i)
    # Dissolve scopes with a single child and merge single-subscope chains.
    alive = [True] * len(groups)

    def reparent_kids(gi: int, parent: int) -> None:
        for k in groups[gi]["kids"]:
            groups[k]["parent"] = parent
        if parent >= 0:
            groups[parent]["kids"].extend(groups[gi]["kids"])
            groups[parent]["nodes"].extend(groups[gi]["nodes"])

    for gi in reversed(range(len(groups))):   # children were made after their parents
        grp = groups[gi]
        if grp["kind"] != "scope":
            continue
        kids = [k for k in grp["kids"] if alive[k]]
        grp["kids"] = kids
        if len(kids) + len(grp["nodes"]) == 1:
            alive[gi] = False
            parent = grp["parent"]
            if parent >= 0:
                groups[parent]["kids"] = [k for k in groups[parent]["kids"] if k != gi]
            reparent_kids(gi, parent)
        elif not grp["nodes"] and len(kids) == 1 and groups[kids[0]]["kind"] == "scope":
            kid = groups[kids[0]]
            grp["label"] = kid["label"]
            grp["nodes"], grp["kids"] = kid["nodes"], []
            alive[kids[0]] = False
            for k in kid["kids"]:
                if alive[k]:
                    groups[k]["parent"] = gi
                    grp["kids"].append(k)
    # Renumber the live groups, set each node's group, split the big ones into ranges.
    live = [gi for gi in range(len(groups)) if alive[gi]]
    new = {gi: k for k, gi in enumerate(live)}
    out = []
    for gi in live:
        grp = groups[gi]
        parent = grp["parent"]
        while parent >= 0 and not alive[parent]:
            parent = groups[parent]["parent"]
        out.append({"label": grp["label"], "kind": grp["kind"],
                    "parent": new.get(parent, -1)})
        for i in grp["nodes"]:
            nodes[i]["p"] = new[gi]
    for i in ids:
        nodes[i].setdefault("p", -1)
    _split_ranges(nodes, ids, out)
    return out


def _split_ranges(nodes, ids: List[int], groups: List[Dict[str, Any]]) -> None:
    """A group (or the graph) with more than CHUNK children gets range groups of CHUNK."""
    children: Dict[int, List[Tuple[str, int]]] = {}
    for i in ids:
        children.setdefault(nodes[i]["p"], []).append(("n", i))
    for gi, grp in enumerate(list(groups)):
        children.setdefault(grp["parent"], []).append(("g", gi))
    for parent, kids in list(children.items()):
        while len(kids) > CHUNK:
            ranges = []
            for start in range(0, len(kids), CHUNK):
                part = kids[start:start + CHUNK]
                gi = len(groups)
                ends = [groups[k]["label"] if kind == "g" else nodes[k]["n"]
                        for kind, k in (part[0], part[-1])]
                label = f"{ends[0]} … {ends[1]} ({start + 1}–{start + len(part)})"
                groups.append({"label": label, "kind": "range", "parent": parent})
                for kind, k in part:
                    if kind == "n":
                        nodes[k]["p"] = gi
                    else:
                        groups[k]["parent"] = gi
                ranges.append(("g", gi))
            kids = ranges


# -- small helpers ---------------------------------------------------------------------------
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
