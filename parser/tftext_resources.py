"""tensorflow-text's SentencePiece model resources through TF2 freezing.
convert_variables_to_constants_v2 turns a captured SentencePiece model (the resource that
SentencepieceOp makes, read by the SentencepieceTokenizeOp family) into a `resource`
Placeholder and drops the model. `restore_sentencepiece` (called by parser/tables.py's
`restore_tables` for each captured resource) writes the Placeholder back as the SentencepieceOp
that makes the resource, its `model` attribute read from the op the resource's owner (a
TrackableResource: tensorflow-text's tokenizer, or a SavedModel's restored resource) creates it
with, so that the frozen graph holds the model as a TF1 graph does.
"""

from __future__ import annotations

from typing import Set, Tuple

# tensorflow-text's ops that read a SentencePiece model resource (SentencepieceOp's handle)
SENTENCEPIECE_USERS = ("SentencepieceTokenizeOp", "SentencepieceTokenizeWithOffsetsOp",
                       "SentencepieceDetokenizeOp", "SentencepieceIdToStringOp",
                       "SentencepieceStringToIdOp", "SentencepieceVocabSizeOp")


# What passes a handle on: ops, and functional ops into their functions' arguments (If and
# Case take the condition or branch index first).
PASS_THROUGH = ("Identity", "Switch", "Merge", "Enter", "Exit", "NextIteration")
FUNCTIONAL = ("If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase",
              "PartitionedCall", "StatefulPartitionedCall")
FIRST_INPUT_NOT_PASSED = ("If", "StatelessIf", "Case", "StatelessCase")
MAX_DEPTH = 32


def _called(node) -> list:
    """The functions a functional NodeDef calls (its func and list-of-func attributes)."""
    names = [v.func.name for v in node.attr.values() if v.WhichOneof("value") == "func"]
    return names + [f.name for v in node.attr.values() if v.WhichOneof("value") == "list"
                    for f in v.list.func]


def _read_by_sentencepiece(graph_def, name: str) -> bool:
    """Whether a SentencePiece op reads tensor `name`: directly, through ops that pass a handle
    on, or inside the functions (calls, If/While/Case bodies) it is passed to."""
    functions = {f.signature.name: f for f in graph_def.library.function}
    return _reads(list(graph_def.node), {name}, functions, set(), 0)


def _reads(nodes, names: Set[str], functions, seen: Set[Tuple[str, int]], depth: int) -> bool:
    names, changed = set(names), True
    while changed:
        changed = False
        for node in nodes:
            refs = [ref.split(":")[0] for ref in node.input if not ref.startswith("^")]
            for position, source in enumerate(refs):
                if source not in names:
                    continue
                if node.op in SENTENCEPIECE_USERS:
                    return True
                if node.op in PASS_THROUGH and node.name not in names:
                    names.add(node.name)
                    changed = True
                if node.op in FUNCTIONAL and depth < MAX_DEPTH:
                    index = position - (1 if node.op in FIRST_INPUT_NOT_PASSED else 0)
                    for called in _called(node):
                        body = functions.get(called)
                        if body is None or not 0 <= index < len(body.signature.input_arg) \
                                or (called, index) in seen:
                            continue
                        seen.add((called, index))
                        if _reads(list(body.node_def), {body.signature.input_arg[index].name},
                                  functions, seen, depth + 1):
                            return True
    return False


def _owners(handle) -> list:
    """The objects that hold `handle` (a TrackableResource holds it as an attribute, a
    restored one in a dict of its attributes): referrers, and the referrers of dicts
    among them."""
    import gc
    direct = gc.get_referrers(handle)
    return direct + [o for d in direct if isinstance(d, dict) for o in gc.get_referrers(d)]


def restore_sentencepiece(tf, graph_def, node, handle) -> bool:
    """A captured SentencePiece model resource (the handle Placeholder `node`, read by
    tensorflow-text's SentencePiece ops) becomes the SentencepieceOp that makes it, with the
    model as its attribute; False (nothing changed) for any other resource. The model is read
    from the op the resource's owner (a TrackableResource) creates it with."""
    if not _read_by_sentencepiece(graph_def, node.name):
        return False
    for owner in _owners(handle):
        create = getattr(owner, "_create_resource", None)
        if not callable(create):
            continue
        made = tf.function(create).get_concrete_function().graph.as_graph_def()
        inner = list(made.node) + [n for f in made.library.function for n in f.node_def]
        model = next((n.attr["model"].s for n in inner if n.op == "SentencepieceOp"), None)
        if model:
            node.op = "SentencepieceOp"
            node.ClearField("attr")
            node.attr["model"].s = model
            node.attr["container"].s = b""
            node.attr["shared_name"].s = f"tf2ir_sentencepiece_{node.name}".encode()
            node.attr["use_node_name_sharing"].b = False
            return True
    return False
