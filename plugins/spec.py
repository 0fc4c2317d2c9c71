"""Hook specifications: what a tf2ir plugin module may implement (pluggy hooks)."""

from __future__ import annotations

from typing import List

import pluggy

PROJECT = "tf2ir"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def tf2ir_op_mappings() -> List["OpRegistration"]:
    """Return the op mappings this plugin registers: each maps one or more origin TF op
    types to a target IR op type, built with `tf2ir.plugins.register_op(...)`."""
