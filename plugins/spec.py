"""Hook specifications: what a tf2ir plugin module may implement (pluggy hooks)."""
# Hookspecs are signatures whose bodies are their docstrings:
# mypy: disable-error-code="empty-body"

from __future__ import annotations

from typing import TYPE_CHECKING, List

import pluggy

if TYPE_CHECKING:
    from tf2ir.ir.onnx.native import NativeLibrary
    from tf2ir.ir.prototype import OpPrototype
    from tf2ir.plugins.fusion import ScopeFusionPass
    from tf2ir.plugins.registry import OpRegistration

PROJECT = "tf2ir"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def tf2ir_op_mappings() -> List["OpRegistration"]:
    """Return the op mappings this plugin registers: each maps one or more origin TF op
    types to a target IR op type, built with `tf2ir.plugins.register_op(...)`."""


@hookspec
def tf2ir_fusion_passes() -> List["ScopeFusionPass"]:
    """Return the scope fusion passes this plugin provides, built with
    `tf2ir.plugins.scope_fusion_pass(name)`. They run on the TF graph before op mapping, in
    the order their run_after/run_before names compute; a conversion switches each one with
    `--fusion on:NAME,off:NAME`. A many-to-one pass's result type is mapped by an op mapping
    registered with `.fusion_parse_params_fn(fn)`."""


@hookspec
def tf2ir_op_prototypes() -> List["OpPrototype"]:
    """Return the IR op prototypes this plugin declares (`tf2ir.ir.op_prototype(...)` or an
    `OpSet`'s): ports, attributes, inference, fold function and ONNX lowering. They get the
    priority, provenance and conflict rules of op mappings: when two plugins declare one op
    type the higher `.with_priority(N)` wins and the override is reported; equal priorities
    are an error. The built-in op families (`tf2ir.opp`) are declared this way too."""


@hookspec
def tf2ir_native_libraries() -> List["NativeLibrary"]:
    """Return the native kernel libraries this plugin ships, built with
    `tf2ir.plugins.native_library(directory, name, domain, ops)`: onnxruntime custom-op
    libraries compiled at install (`tf2ir.plugins.native_build`). The runtime entry
    (`tf2ir.InferenceSession`, `tf2ir run`, `verify`) registers a library when a model holds
    its ops, which then run natively; the ops' Python kernels stay the fold functions and the
    fallback where the library was not built. Two libraries serving one op: the higher
    `priority` wins; equal priorities are an error."""
