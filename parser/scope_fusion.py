"""Runs the scope fusion passes on the TF graph, before op mapping (DESIGN decision 7).

The runner only rewrites the `TfGraph`; it never emits IR. A many-to-one result becomes a
`FusedNode`: a TfNode over a new NodeDef whose op is the result type, so the op mapping
registered for that origin type (`fusion_parse_params_fn`) maps it like any TF node. A
many-to-many result becomes one FusedNode per inner node, of origin type 'ir:<IR type>',
which the plugin manager maps to that IR op as it is. Consumers of the fused tensors are
rewired and producers left without consumers are dropped, so the default outputs stay.
A match is declined (the graph left as it was) when a tensor leaving it is not a fused
output, when fusing it would make a cycle, or when it would remove a requested output; and
when the pass's result function declines it (`ScopeMatch.decline(reason)`: the pattern
matched but a condition of the fusion does not hold). A pass's declines are logged at INFO
(`-v`); only a pass the user switched on by name (`--fusion on:NAME`) turns its reasoned
declines into an error, since the user asked for that fusion.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

import numpy as np
from tensorboard.compat.proto import node_def_pb2

from tf2ir.ir.errors import PLUGIN_EXITS, ConversionError, plugin_exit
from tf2ir.ir.names import fresh_name
from tf2ir.ir.passes.manager import PassManager, Switches
from tf2ir.parser.graph_view import TfGraph, TfNode, split_tensor_name
from tf2ir.parser.scope_match import GraphIndex, find_candidates
from tf2ir.plugins.fusion import (
    INNER_NODE_PREFIX, DeferredFusionPass, FusionDeclined, FusionResult, ScopeFusionPass,
    ScopeMatch, ScopePattern, Tensor,
)

log = logging.getLogger("tf2ir.fusion")


class FusedNode(TfNode):
    """A node a fusion pass made: attributes are Python values (the result's attrs), and
    `inner_nodes` are the TF nodes it replaced."""

    __slots__ = ("inner_nodes", "pass_name", "scope", "description", "num_outputs")

    def __init__(self, name: str, op_type: str, inputs: Sequence[Tensor], attrs: Dict[str, Any],
                 control_inputs: Sequence[str] = (), inner_nodes: Sequence[TfNode] = (),
                 pass_name: str = "", scope: str = "", description: str = "",
                 num_outputs: Optional[int] = None):
        node_def = node_def_pb2.NodeDef(name=name, op=op_type)
        node_def.input.extend([f"{n}:{p}" for n, p in inputs] + [f"^{c}" for c in control_inputs])
        super().__init__(node_def)
        self._attrs = dict(attrs)
        self.inner_nodes = list(inner_nodes)
        self.pass_name, self.scope, self.description = pass_name, scope, description
        self.num_outputs = num_outputs

    def has_attr(self, name: str) -> bool:
        return name in self._attrs


@dataclass
class FusionTarget:
    """What a fusion pass works on: the TF graph, the tensors that must survive (requested
    outputs) and the op-type index the matcher keeps up to date."""

    tf_graph: TfGraph
    keep: Set[Tensor]
    index: GraphIndex


def requested_by_name(switches: Switches) -> Set[str]:
    """The passes the --fusion words switch on by name, where no later word switches them
    (or all) off: `on:layer_norm` asks for layer_norm; `on:all` asks for none by name."""
    if not switches:
        return set()
    if isinstance(switches, dict):     # 'all' applies first, then the names
        return {n for n, on in switches.items() if on and n != "all"}
    texts = [switches] if isinstance(switches, str) else list(switches)
    named: Set[str] = set()
    for word in (w.strip() for text in texts for w in text.split(",")):
        state, _, name = word.partition(":")
        name = name.strip()
        if name == "all":
            if state == "off":
                named.clear()
        elif state == "on":
            named.add(name)
        else:
            named.discard(name)
    return named


def fusion_manager(manager, switches: Switches = None, check: bool = False) -> PassManager:
    """The pass manager of the plugins' fusion passes, switched by `switches` (--fusion)."""
    strict = requested_by_name(switches)

    def runner(fusion_pass: Union[ScopeFusionPass, DeferredFusionPass]):
        def run(target: FusionTarget) -> int:
            found: Optional[ScopeFusionPass]
            if isinstance(fusion_pass, DeferredFusionPass):   # imported if it may match
                found = fusion_pass.resolve(target.index.refresh())
            else:
                found = fusion_pass
            return 0 if found is None else _PassRun(target.tf_graph, found, target.keep,
                                                    target.index, found.name in strict).run()
        return run
    plan = getattr(manager, "fusion_plan", None)   # a PluginManager's, with deferred passes
    passes = plan() if plan is not None else getattr(manager, "fusion_passes", [])
    records = [p.record(runner(p)) for p in passes]
    return PassManager(records, switches, "--fusion", check_fused_graph if check else None)


def apply_scope_fusion(tf_graph: TfGraph, manager, switches: Switches = None,
                       keep: Sequence[str] = (), check: bool = False) -> Dict[str, int]:
    """Run the manager's enabled fusion passes in order on `tf_graph` (rewritten in place);
    `keep` names tensors that must survive (requested outputs). Returns pass → matches fused."""
    target = FusionTarget(tf_graph, {split_tensor_name(t) for t in keep}, GraphIndex(tf_graph))
    counts = fusion_manager(manager, switches, check).run(target)
    return {name: count for name, count in counts.items() if count}


def check_fused_graph(target: FusionTarget) -> None:
    """--check-passes after a fusion pass: every input names an existing node and port."""
    nodes = target.tf_graph.nodes
    for node in nodes.values():
        for src, _ in node.inputs:
            if src not in nodes:
                raise ConversionError(f"input '{src}' does not exist", node=node.name,
                                      op_type=node.op_type)
        for src in node.control_inputs:
            if src not in nodes:
                raise ConversionError(f"control input '{src}' does not exist",
                                      node=node.name, op_type=node.op_type)


# -- rewriting --------------------------------------------------------------------------------
class _Declined(Exception):
    """The match cannot be fused as the result says; the graph is left as it was."""


class _PassRun:
    """One pass over the graph: every pattern in order, each candidate matched, checked
    and rewritten; `users` (node → consumer names) is kept up to date by the rewrites."""

    def __init__(self, tf_graph: TfGraph, fusion_pass: ScopeFusionPass, keep: Set[Tensor],
                 index: GraphIndex, strict: bool = False):
        self.tf = tf_graph
        self.strict = strict          # the user asked for this pass by name
        self.index = index
        self.fusion_pass = fusion_pass
        self.keep = keep
        self.users: Dict[str, Set[str]] = {}

    def run(self) -> int:
        applied = 0
        for pattern in self.fusion_pass.patterns:
            while True:   # again when a candidate went stale because an earlier one was fused
                done, stale = self._run_pattern(pattern)
                applied += done
                if not (done and stale):
                    break
        return applied

    def _index_users(self) -> None:
        self.users = {name: set() for name in self.tf.nodes}
        for node in self.tf.nodes.values():
            for src, _ in node.inputs:
                self.users[src].add(node.name)
            for src in node.control_inputs:
                if src in self.users:
                    self.users[src].add(node.name)

    def _run_pattern(self, pattern: ScopePattern) -> Tuple[int, int]:
        candidates = find_candidates(self.tf, pattern, self.index)
        if not candidates:
            return 0, 0
        self._index_users()
        snapshot = dict(self.tf.nodes)
        done = stale = 0
        for scope, names, labels in candidates:
            if any(self.tf.nodes.get(n) is not snapshot[n] for n in set(names) | set(labels.values())):
                stale += 1
                continue
            try:
                if self._fuse(pattern, scope, names, labels):
                    done += 1
            except _Declined as why:
                log.debug("fusion %s declines %s: %s", self.fusion_pass.name, scope or names[-1], why)
        return done, stale

    def _boundary(self, members: Set[str], names: List[str]) -> Tuple[List[Tensor], List[Tensor]]:
        inputs: List[Tensor] = []
        outputs: List[Tensor] = []
        for name in names:
            for tensor in self.tf.nodes[name].inputs:
                if tensor[0] not in members and tensor not in inputs:
                    inputs.append(tensor)
        for name in names:
            users = self.users[name]
            ports = {p for u in users - members for s, p in self.tf.nodes[u].inputs if s == name}
            outputs.extend((name, p) for p in sorted(ports))
            if not users and self.tf.nodes[name].op_type not in ("Const", "NoOp"):
                outputs.append((name, 0))   # a sink: a default output of the graph
        return inputs, outputs

    def _fuse(self, pattern, scope, names, labels) -> bool:
        members = set(names)
        inputs, outputs = self._boundary(members, names)
        match = ScopeMatch(pattern, scope, [self.tf.nodes[n] for n in names],
                           {l: self.tf.nodes[n] for l, n in labels.items()}, inputs, outputs, self.tf)
        result = self._result(match, scope or names[-1])
        if result is None:
            return False
        ins = [_tensor(t) for t in (result.inputs if result.inputs is not None else inputs)]
        outs = [_tensor(t) for t in (result.outputs if result.outputs is not None else outputs)]
        kept = self._producers_within(members, ins)
        removed = members - kept
        if not removed:
            raise self._error("its result keeps every matched node (they all feed its inputs)", scope)
        for tensor in outs:
            if tensor[0] not in removed:
                raise self._error(f"fused output {tensor[0]}:{tensor[1]} is not produced by a node "
                                  "the fusion replaces", scope)
        new_nodes, out_map = self._build(match, result, ins, outs, removed, scope)
        self._check(removed, out_map, ins)
        self._rewrite(removed, new_nodes, out_map, outs)
        self.index.stale = True
        return True

    def _result(self, match: ScopeMatch, where: str) -> Optional[FusionResult]:
        fusion_pass = self.fusion_pass
        try:
            result = fusion_pass.generate_result(match)
        except FusionDeclined as why:
            if self.strict:
                raise self._error(f"declines this match: {why} (the pass was asked for by "
                                  f"--fusion on:{fusion_pass.name}; leave that word out to "
                                  "convert these nodes unfused)", where) from None
            log.info("fusion %s declines %s: %s", fusion_pass.name, where, why)
            return None
        except ConversionError as exc:
            raise exc.located(node=where, plugin=fusion_pass.plugin)
        except Exception as exc:
            raise self._error(f"failed: {type(exc).__name__}: {exc}", where) from exc
        except PLUGIN_EXITS as exc:
            raise plugin_exit(exc, f"fusion pass {fusion_pass.name}", node=where,
                              plugin=fusion_pass.plugin) from exc
        if result is not None and not isinstance(result, FusionResult):
            raise self._error(f"returned {type(result).__name__}, expected a FusionResult", where)
        if result is not None and not result.type and not result.inner_nodes:
            raise self._error("its FusionResult has neither a type nor inner nodes", where)
        return result

    def _error(self, message: str, where: str) -> ConversionError:
        return ConversionError(f"fusion pass {self.fusion_pass.name}: {message}", node=where,
                               plugin=self.fusion_pass.plugin)

    def _producers_within(self, members: Set[str], tensors: List[Tensor]) -> Set[str]:
        """Matched nodes a fused input needs (with their producers): they are kept."""
        kept, stack = set(), [t[0] for t in tensors if t[0] in members]
        while stack:
            name = stack.pop()
            if name not in kept:
                kept.add(name)
                stack.extend(s for s, _ in self.tf.nodes[name].inputs if s in members)
        return kept

    def _unique(self, name: str, removed: Set[str], taken: Set[str]) -> str:
        name = fresh_name(name, taken, lambda n: n in self.tf.nodes and n not in removed)
        taken.add(name)
        return name

    def _build(self, match, result, ins, outs, removed, scope):
        """The new nodes (in order) and fused tensor → replacement tensor."""
        controls = sorted({c for n in removed for c in self.tf.nodes[n].control_inputs
                           if c not in removed and c in self.tf.nodes})
        base = result.name or (outs[0][0] if outs else scope)
        taken: Set[str] = set()
        common = dict(inner_nodes=match.nodes, pass_name=self.fusion_pass.name, scope=scope,
                      description=result.description)
        if not result.inner_nodes:            # many-to-one
            name = self._unique(base, removed, taken)
            node = FusedNode(name, result.type, ins, result.attrs, controls, **common)
            return [node], {t: (name, j) for j, t in enumerate(outs)}
        if len(result.output_of) != len(outs):
            raise self._error(f"{len(outs)} fused outputs but output_of names "
                              f"{len(result.output_of)}", scope)
        names = {inner.name: self._unique(f"{base}/{inner.name}", removed, taken)
                 for inner in result.inner_nodes}
        nodes: List[FusedNode] = []

        def ref(value, owner, k):
            if isinstance(value, tuple) and value and value[0] == "input":
                return ins[value[1]]
            if isinstance(value, tuple) and value and value[0] == "inner":
                return (names[value[1]], value[2])
            array = np.asarray(value)
            const = self._unique(f"{names[owner]}/const{k}", removed, taken)
            nodes.append(FusedNode(const, "Const", [], {"value": array}, **common))
            return (const, 0)
        for inner in result.inner_nodes:
            inputs = [ref(v, inner.name, k) for k, v in enumerate(inner.inputs)]
            nodes.append(FusedNode(names[inner.name], INNER_NODE_PREFIX + inner.ir_type, inputs,
                                   inner.attrs, controls, num_outputs=inner.num_outputs, **common))
        return nodes, {t: ref(o, None, 0) for t, o in zip(outs, result.output_of)}

    def _check(self, removed, out_map, ins) -> None:
        for name in removed:
            if not self.users[name] and (name, 0) not in out_map \
                    and self.tf.nodes[name].op_type not in ("Const", "NoOp"):
                raise _Declined(f"{name} is a default output of the graph but not a fused output")
            for user in self.users[name] - removed:
                for tensor in self.tf.nodes[user].inputs:
                    if tensor[0] == name and tensor not in out_map:
                        raise _Declined(f"tensor {name}:{tensor[1]} leaves the match but is not "
                                        "a fused output")
        for tensor in self.keep:
            if tensor[0] in removed and out_map.get(tensor) != tensor:
                raise _Declined(f"requested output {tensor[0]}:{tensor[1]} would disappear")
        # A cycle: a consumer of a fused output reaches a producer of a fused input.
        targets = {t[0] for t in ins}
        stack = [u for n in removed for u in self.users[n] - removed]
        seen = set()
        while stack:
            name = stack.pop()
            if name in targets:
                raise _Declined("fusing would make a cycle")
            if name not in seen:
                seen.add(name)
                stack.extend(self.users.get(name, ()))

    def _rewrite(self, removed, new_nodes, out_map, outs) -> None:
        old = self.tf.nodes
        anchor = outs[0][0] if outs else [n for n in old if n in removed][-1]
        producers = {s for n in removed for s, _ in old[n].inputs}
        producers.update(c for n in removed for c in old[n].control_inputs if c in old)
        rewired = {u for n in removed for u in self.users[n]} - removed
        nodes: Dict[str, TfNode] = {}
        for name, node in old.items():
            if name == anchor:
                nodes.update((n.name, n) for n in new_nodes)
            if name not in removed:
                nodes[name] = node
        self.tf.nodes = nodes
        control_target = new_nodes[-1].name
        for name in rewired:
            node = nodes[name]
            node.inputs[:] = [out_map.get(t, t) for t in node.inputs]
            controls = [control_target if c in removed else c for c in node.control_inputs]
            node.control_inputs[:] = list(dict.fromkeys(controls))
        for name in removed:
            del self.users[name]
        for name in producers - removed:
            self.users[name] -= removed
        for node in new_nodes:
            self.users[node.name] = set()
        for name in [n.name for n in new_nodes] + sorted(rewired):
            node = nodes[name]
            for src in [s for s, _ in node.inputs] + node.control_inputs:
                if src in self.users:
                    self.users[src].add(name)
        self._drop_orphans(producers - removed)

    def _drop_orphans(self, names: Set[str]) -> None:
        """Producers the fusion left without consumers would become new default outputs."""
        keep = {t[0] for t in self.keep}
        stack = list(names)
        while stack:
            name = stack.pop()
            node = self.tf.nodes.get(name)
            if node is None or self.users.get(name) or node.op_type == "Placeholder" or name in keep:
                continue
            del self.tf.nodes[name]
            del self.users[name]
            for src in [s for s, _ in node.inputs] + node.control_inputs:
                if src in self.users:
                    self.users[src].discard(name)
                    stack.append(src)


def _tensor(value) -> Tensor:
    if isinstance(value, str):
        return split_tensor_name(value)
    if isinstance(value, TfNode):
        return (value.name, 0)
    name, port = value
    return (name.name if isinstance(name, TfNode) else name, int(port))
