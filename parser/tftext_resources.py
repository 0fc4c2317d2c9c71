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

# tensorflow-text's ops that read a SentencePiece model resource (SentencepieceOp's handle)
SENTENCEPIECE_USERS = ("SentencepieceTokenizeOp", "SentencepieceTokenizeWithOffsetsOp",
                       "SentencepieceDetokenizeOp", "SentencepieceIdToStringOp",
                       "SentencepieceStringToIdOp", "SentencepieceVocabSizeOp")


def _read_by_sentencepiece(graph_def, name: str) -> bool:
    """Whether a SentencePiece op reads tensor `name` (directly or through Identity nodes)."""
    names, changed = {name}, True
    while changed:
        changed = False
        for user in graph_def.node:
            if not any(i.split(":")[0] in names for i in user.input if not i.startswith("^")):
                continue
            if user.op in SENTENCEPIECE_USERS:
                return True
            if user.op == "Identity" and user.name not in names:
                names.add(user.name)
                changed = True
    return False


def restore_sentencepiece(tf, graph_def, node, handle) -> bool:
    """A captured SentencePiece model resource (the handle Placeholder `node`, read by
    tensorflow-text's SentencePiece ops) becomes the SentencepieceOp that makes it, with the
    model as its attribute; False (nothing changed) for any other resource. The model is read
    from the op the resource's owner (a TrackableResource) creates it with."""
    if not _read_by_sentencepiece(graph_def, node.name):
        return False
    import gc
    for owner in gc.get_referrers(handle):
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
