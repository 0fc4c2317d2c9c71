"""A tf2ir report's view data (tools/report_views.py): the nodes of the TF, IR and ONNX views,
their graphs with edges and links across views, and the groups a graph's nodes are drawn in
(name scopes, fusions, fallback segments, ranges of a big scope)."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

CHUNK = 120             # a group with more children is split into ranges of this many


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
