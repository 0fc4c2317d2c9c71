"""Raising TF1 control flow back into functional If and While nodes, before inlining.

TF's default freezing (`convert_variables_to_constants_v2`, and any TF1 graph with
`tf.cond`/`tf.while_loop`) spells control flow as dataflow: a `Switch` sends a tensor to
one of two outputs by a predicate and a `Merge` forwards whichever input is alive (a
cond), and a loop is a frame that `Enter` opens, whose variables go round through
`Merge` → `Switch` (on `LoopCond`) → body → `NextIteration` → `Merge` and leave through
`Exit`. tf2ir converts control flow through the If/While plugins, whose branches, cond
and body are library functions; so this module turns each such structure back into an
`If` or `While` node with FunctionDefs added to the graph's library, and the rest of the
pipeline (inlining, FunctionalNode, the plugins, the text IR's subgraphs) is the same as
for a graph frozen with `lower_control_flow=False`.

Every node gets a context: the stack of frames (`Enter` pushes, `Exit` pops) and cond
branches (a cond `Switch` output pushes (predicate, side), a `Merge` pops) it runs in.
The deepest structure is raised first, so nested conds and loops (a cond in a loop body,
a loop in a branch, loops in loops) come out as nested functional nodes. Loop-invariant
`Enter`s (`is_constant`) become loop variables the body passes through; a `Switch` whose
other side nothing reads (a dead branch) gives a branch that returns its argument.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.names import fresh_name
from tf2ir.parser.graph_view import TfGraph, TfNode

SWITCH_OPS = ("Switch", "RefSwitch")
MERGE_OPS = ("Merge", "RefMerge")
ENTER_OPS = ("Enter", "RefEnter")
EXIT_OPS = ("Exit", "RefExit")
NEXT_OPS = ("NextIteration", "RefNextIteration")
LOOP_OPS = ENTER_OPS + EXIT_OPS + NEXT_OPS + ("LoopCond",)
TF1_OPS = LOOP_OPS + SWITCH_OPS + MERGE_OPS
MAX_STRUCTURES = 100_000
Tensor = Tuple[str, int]
Context = Tuple[tuple, ...]   # ("F", frame) and ("C", predicate, side) entries, outermost first


def has_tf1_control_flow(tf_graph: TfGraph) -> bool:
    return any(node.op_type in TF1_OPS for node in tf_graph.nodes.values())


def raise_control_flow(tf_graph: TfGraph) -> int:
    """Replace every TF1 cond and while frame of `tf_graph` by an If / While node whose
    functions join the graph's library, innermost first; return how many were raised. A
    structure that is not well formed is a ConversionError naming a node of it."""
    if not has_tf1_control_flow(tf_graph):
        return 0
    _check_arity(tf_graph)
    raiser = _Raiser(tf_graph)
    count = 0
    while count < MAX_STRUCTURES:
        contexts = _contexts(tf_graph)
        depth = max(map(len, contexts.values()), default=0)
        if not depth:
            break
        # The structures at the greatest depth hold no other: raise them all, then look again.
        raiser.begin(contexts)
        for deepest in dict.fromkeys(c[:-1] + (c[-1][:2],) for c in contexts.values()
                                     if len(c) == depth):   # a cond's two sides: once
            if deepest[-1][0] == "F":
                raiser.raise_loop(deepest)
                count += 1
                continue
            while raiser.raise_cond(deepest[:-1], deepest[-1][1]):
                count += 1   # one connected cond at a time: a predicate may serve several
        raiser.finish()
    leftover = [n for n in tf_graph.nodes.values() if n.op_type in TF1_OPS]
    if leftover:
        raise _error(leftover[0], "is outside every cond and loop it could belong to")
    return count


_ARITY = {**{op: (2, 2) for op in SWITCH_OPS}, **{op: (1, None) for op in MERGE_OPS},
          **{op: (1, 1) for op in ENTER_OPS + EXIT_OPS + NEXT_OPS + ("LoopCond",)}}


def _check_arity(tf_graph: TfGraph) -> None:
    """Each TF1 control-flow node has the data inputs its op takes, an Enter a frame name."""
    for node in tf_graph.nodes.values():
        least, most = _ARITY.get(node.op_type, (0, None))
        if len(node.inputs) < least or (most is not None and len(node.inputs) > most):
            raise _error(node, f"has {len(node.inputs)} data inputs")
        if node.op_type in ENTER_OPS and not isinstance(node.attr("frame_name"), str):
            raise _error(node, "has no frame_name")


def _error(node: TfNode, message: str) -> ConversionError:
    return ConversionError(f"TF1 control flow: {message}", node=node.name, op_type=node.op_type,
                           exit_code=ExitStatus.UNSUPPORTED)


# -- contexts --------------------------------------------------------------------------------
def _predicate(tf_graph: TfGraph, tensor: Tensor) -> Tensor:
    """The tensor a predicate stands for, through Identity nodes (TF1's `pred_id`)."""
    seen = 0
    while tf_graph.nodes[tensor[0]].op_type == "Identity" and seen < len(tf_graph.nodes):
        tensor = tf_graph.nodes[tensor[0]].inputs[0]
        seen += 1
    return tensor


def _is_loop_switch(tf_graph: TfGraph, node: TfNode) -> bool:
    return len(node.inputs) == 2 and tf_graph.nodes[node.inputs[1][0]].op_type == "LoopCond"


def _is_loop_merge(tf_graph: TfGraph, node: TfNode) -> bool:
    return any(tf_graph.nodes[src].op_type in ENTER_OPS + NEXT_OPS for src, _ in node.inputs)


def _order(tf_graph: TfGraph) -> List[str]:
    """The nodes in an order where each follows its inputs, NextIteration → Merge edges
    (the loops' back edges) left out."""
    import networkx as nx
    dag = nx.DiGraph()
    dag.add_nodes_from(tf_graph.nodes)
    for node in tf_graph.nodes.values():
        back = node.op_type in MERGE_OPS
        for src in [s for s, _ in node.inputs] + node.control_inputs:
            if src in tf_graph.nodes and not (back and tf_graph.nodes[src].op_type in NEXT_OPS):
                dag.add_edge(src, node.name)
    try:
        return list(nx.topological_sort(dag))
    except nx.NetworkXUnfeasible:
        name = nx.find_cycle(dag)[0][0]
        raise _error(tf_graph.nodes[name], "a cycle that is not a while loop") from None


def _contexts(tf_graph: TfGraph) -> Dict[Tensor, Context]:
    """The context of every node output that has one (port -1: the node as a whole, which
    is what its control outputs carry); nodes without inputs have none."""
    ctx: Dict[Tensor, Context] = {}

    def of(src: str, port: int) -> Context:
        return ctx.get((src, port), ctx.get((src, -1), ()))

    for name in _order(tf_graph):
        node = tf_graph.nodes[name]
        op = node.op_type
        ins = [(s, p) for s, p in node.inputs
               if not (op in MERGE_OPS and tf_graph.nodes[s].op_type in NEXT_OPS)]
        found = [of(s, p) for s, p in ins] + [of(s, -1) for s in node.control_inputs]
        if op in MERGE_OPS and not _is_loop_merge(tf_graph, node):
            found = [c[:-1] if c and c[-1][0] == "C" else c for c in found]
        here = max(found, key=len, default=())
        for other in found:
            if here[:len(other)] != other:
                raise _error(node, "its inputs come from different branches or loops")
        if op in ENTER_OPS:
            here = here + (("F", node.attr("frame_name")),)
        elif op in EXIT_OPS:
            if not here or here[-1][0] != "F":
                raise _error(node, "leaves no loop")
            here = here[:-1]
        if op in SWITCH_OPS and not _is_loop_switch(tf_graph, node):
            key = ("C", _predicate(tf_graph, node.inputs[1]))
            ctx[(name, 0)] = here + (key + (False,),)
            ctx[(name, 1)] = here + (key + (True,),)
            ctx[(name, -1)] = here
        elif here:
            ctx[(name, -1)] = here
    return ctx


# -- raising ---------------------------------------------------------------------------------
class _Raiser:
    """Raises the structures of one depth against an index of the graph built by `begin`;
    `finish` applies the replacements in one pass."""

    def __init__(self, tf_graph: TfGraph):
        from tf2ir.parser.control_bodies import FunctionWriter
        self.graph = tf_graph
        self.functions = FunctionWriter(tf_graph)

    def begin(self, contexts) -> None:
        self.contexts = contexts
        self.users: Dict[str, List[Tuple[TfNode, int]]] = {}
        self.members: Dict[Context, List[TfNode]] = {}
        self.switches: Dict[tuple, List[TfNode]] = {}
        self.merges: Dict[Context, List[TfNode]] = {}
        for node in self.graph.nodes.values():
            for src, port in node.inputs:
                self.users.setdefault(src, []).append((node, port))
            here = contexts.get((node.name, -1))
            if here:
                self.members.setdefault(here, []).append(node)
            if node.op_type in SWITCH_OPS and (node.name, 1) in contexts:
                inner = contexts[(node.name, 1)]
                self.switches.setdefault((inner[:-1], inner[-1][1]), []).append(node)
            elif node.op_type in MERGE_OPS and not _is_loop_merge(self.graph, node):
                self.merges.setdefault(here or (), []).append(node)
        self.removed: Set[str] = set()
        self.placed: Dict[str, List[TfNode]] = {}   # a removed node → what takes its place
        self.outputs: Dict[str, Tensor] = {}
        self.taken: Set[str] = set(self.graph.nodes)

    def _name(self, base: str) -> str:
        name = fresh_name(base, self.taken)
        self.taken.add(name)
        return name

    # - while frames -
    def raise_loop(self, frame: Context) -> None:
        nodes, contexts = self.graph.nodes, self.contexts
        members = self.members[frame]
        enters = [n for n in members if n.op_type in ENTER_OPS]
        conds = [n for n in members if n.op_type == "LoopCond"]
        where = enters[0] if enters else members[0]
        if len(conds) != 1:
            raise _error(where, f"frame '{frame[-1][1]}' has {len(conds)} LoopCond nodes")
        users = self.users
        variables, invariants = [], []
        for enter in sorted(enters, key=_creation_order):
            if enter.attr("is_constant", False):
                invariants.append(enter)
                continue
            merge = _only(users.get(enter.name, []), MERGE_OPS, enter, "a Merge")
            nxt = [nodes[s] for s, _ in merge.inputs if nodes[s].op_type in NEXT_OPS]
            switches = [u for u, _ in users.get(merge.name, []) if u.op_type in SWITCH_OPS]
            if len(nxt) != 1 or len(switches) > 1 or \
                    not all(_is_loop_switch(self.graph, s) for s in switches):
                raise _error(merge, "a loop variable's Merge needs one NextIteration and at "
                                    "most one Switch, on the LoopCond")
            switch = switches[0] if switches else None   # none: neither body nor Exit reads it
            exits = [u for u, port in users.get(switch.name, []) if u.op_type in EXIT_OPS] \
                if switch else []
            variables.append((enter, merge, switch, nxt[0], exits))
        dtypes = [_dtype(e) for e, *_ in variables] + [_dtype(e) for e in invariants]
        loop_name = self._name(f"{_scope(where.name)}while")
        # cond: the variables as the Merges give them; body: as the Switches' true side.
        cond_args = {(m.name, 0): i for i, (_, m, _, _, _) in enumerate(variables)}
        body_args = {(s.name, 1): i for i, (_, _, s, _, _) in enumerate(variables) if s}
        for i, enter in enumerate(invariants, len(variables)):
            cond_args[(enter.name, 0)] = body_args[(enter.name, 0)] = i
        stops = {e.name for e in enters} | {v[1].name for v in variables} | \
                {v[2].name for v in variables if v[2]}
        cond_fn = self.functions.write(f"{loop_name}_cond", dtypes, cond_args,
                                       [conds[0].inputs[0]], ["bool"], frame, contexts, stops)
        body_out: List[Optional[Tensor]] = [v[3].inputs[0] for v in variables]
        body_out += [None] * len(invariants)   # an invariant: its argument, passed through
        body_fn = self.functions.write(f"{loop_name}_body", dtypes, body_args, body_out, dtypes,
                                       frame, contexts, stops)
        inputs = [e.inputs[0] for e, *_ in variables] + [e.inputs[0] for e in invariants]
        loop = self.functions.node(loop_name, "While", inputs, {
            "T": ("types", dtypes), "cond": ("func", cond_fn), "body": ("func", body_fn),
            "parallel_iterations": ("i", 10)})
        removed = {n.name for n in members}
        outputs = {}
        for i, (_, _, _, _, exits) in enumerate(variables):
            for ex in exits:
                outputs[ex.name] = (loop_name, i)
                removed.add(ex.name)
        self._replace(removed, [loop], outputs)

    # - cond diamonds -
    def raise_cond(self, outer: Context, key) -> bool:
        """Raise one connected cond of predicate `key` at context `outer`: its Switches, the
        nodes of its two branches and the Merges that join them. False if none is left."""
        contexts, removed = self.contexts, self.removed
        inside = {n.name for side in (False, True)
                  for n in self.members.get(outer + (("C", key, side),), [])} - removed
        switches = [n for n in self.switches.get((outer, key), []) if n.name not in removed]
        merges = [n for n in self.merges.get(outer, []) if n.name not in removed
                  and any(_side(contexts, t, outer, key) is not None for t in n.inputs)]
        if not switches:
            return False
        group = self._component(switches[0], switches, merges, inside)
        sw = [n for n in switches if n.name in group]
        mg = [n for n in merges if n.name in group]
        if not mg:   # branches nothing merges: no output can need them
            self._replace(group, [], {})
            return True
        users = self.users
        for merge in mg:
            if any(port == 1 for u, port in users.get(merge.name, []) if u.name not in group):
                raise _error(merge, "a Merge's value_index output is read")
        sw.sort(key=_creation_order)
        mg.sort(key=_creation_order)
        outs = [_dtype(m) for m in mg]
        name = self._name(f"{_scope(mg[0].name)}cond")
        stops = {s.name for s in sw}
        results: Dict[bool, List[Tensor]] = {}
        used: Set[Tensor] = set()   # the Switch inputs a branch reads: one argument each
        for side, branch in ((True, "then"), (False, "else")):
            results[side] = []
            for merge in mg:
                picks = [t for t in merge.inputs if _side(contexts, t, outer, key) == side]
                if len(picks) != 1:
                    raise _error(merge, f"a Merge needs one input from the {branch} branch")
                results[side].append(picks[0])
            args = {(s.name, int(side)): i for i, s in enumerate(sw)}
            used |= {sw[i].inputs[0] for i in self.functions.used(
                results[side], args, outer + (("C", key, side),), contexts, stops)}
        operands = [s.inputs[0] for s in sw if s.inputs[0] in used]
        operands = [t for i, t in enumerate(operands) if t not in operands[:i]]
        dtypes = [_dtype(next(s for s in sw if s.inputs[0] == t)) for t in operands]
        functions = {}
        for side, branch in ((True, "then"), (False, "else")):
            args = {(s.name, int(side)): operands.index(s.inputs[0])
                    for s in sw if s.inputs[0] in used}
            functions[branch] = self.functions.write(
                f"{name}_{branch}", dtypes, args, results[side], outs,
                outer + (("C", key, side),), contexts, stops)
        cond = self.functions.node(name, "If", [sw[0].inputs[1]] + operands, {
            "Tcond": ("type", "bool"), "Tin": ("types", dtypes), "Tout": ("types", outs),
            "then_branch": ("func", functions["then"]),
            "else_branch": ("func", functions["else"])})
        self._replace(group, [cond], {m.name: (name, i) for i, m in enumerate(mg)})
        return True

    def _component(self, start: TfNode, switches, merges, inside: Set[str]) -> Set[str]:
        """The switches, branch nodes and merges connected to `start` (through data and
        control edges among them): one cond."""
        import networkx as nx
        members = {n.name for n in switches} | {n.name for n in merges} | inside
        links = nx.Graph()
        links.add_nodes_from(members)
        for name in members - {n.name for n in switches}:   # a Switch reads the outside
            node = self.graph.nodes[name]
            for src in [s for s, _ in node.inputs] + node.control_inputs:
                if src in members and self.graph.nodes[src].op_type not in MERGE_OPS:
                    links.add_edge(src, name)   # a Merge's consumers are outside the cond
        return set(nx.node_connected_component(links, start.name))

    def _replace(self, removed: Set[str], new: List[TfNode], outputs: Dict[str, Tensor]) -> None:
        """Drop the `removed` nodes, add `new` where the first of them stood, and make each
        name of `outputs` an Identity of that tensor (its consumers keep their inputs): at
        `finish`."""
        anchor = next(name for name in self.graph.nodes if name in removed)
        self.placed.setdefault(anchor, []).extend(new)
        self.removed |= removed
        self.outputs.update(outputs)

    def finish(self) -> None:
        from tf2ir.parser.control_bodies import identity
        fresh: Dict[str, TfNode] = {}
        for name, node in self.graph.nodes.items():
            if name in self.outputs:
                fresh[name] = identity(name, self.outputs[name], node)
            elif name not in self.removed:
                fresh[name] = node
            fresh.update((n.name, n) for n in self.placed.get(name, []))
        for node in fresh.values():
            for src, _ in node.inputs:
                if src not in fresh:
                    raise _error(node, f"reads '{src}', which the raised control flow holds")
            node.control_inputs = [c for c in node.control_inputs if c in fresh]
        self.graph.nodes = fresh


def _side(contexts, tensor: Tensor, outer: Context, key) -> Optional[bool]:
    ctx = contexts.get(tensor) or contexts.get((tensor[0], -1), ())
    if len(ctx) == len(outer) + 1 and ctx[:-1] == outer and ctx[-1][:2] == ("C", key):
        return ctx[-1][2]
    return None


def _only(users, ops, node: TfNode, what: str) -> TfNode:
    found = [u for u, _ in users if u.op_type in ops]
    if len(found) != 1:
        raise _error(node, f"needs exactly one consumer that is {what}, has {len(found)}")
    return found[0]


def _dtype(node: TfNode) -> str:
    dtype = node.attr("T")
    if not isinstance(dtype, str):
        raise _error(node, "has no dtype attribute T")
    return dtype


def _creation_order(node: TfNode):
    """TF numbers the nodes it makes one after another ('Enter', 'Enter_1', ... in TF1;
    '.../enter/_7' when lowering): sorting by that number puts loop variables and cond
    operands back in the order of the functional op they came from."""
    digits = node.name.rstrip("0123456789")
    number = node.name[len(digits):]
    return (int(number) if number else -1, node.name)


def _scope(name: str) -> str:
    return name.rsplit("/", 1)[0] + "/" if "/" in name else ""
