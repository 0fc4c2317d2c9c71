"""The plugin system: hookspecs, the plugin manager, `register_op`, `auto_mapping`, scope fusion
passes, `TfNode` (the TF node plugins read); `builtin/` holds the built-in TF plugins."""

from tf2ir.plugins.spec import hookimpl, hookspec
from tf2ir.plugins.tfnode import FunctionalTfNode, FusedTfNode, TfNode
from tf2ir.plugins.registry import TENSORFLOW, TFLITE, ImplyType, OpRegistration, register_op
from tf2ir.plugins.mapping import DynamicInputOutputInfo, IrOp, auto_mapping, auto_mapping_dynamic
from tf2ir.plugins.subgraph import SubgraphBuilder
from tf2ir.plugins.libraries import NativeLibrary, native_library
from tf2ir.plugins.fusion import (
    FusionResult, InnerNode, ScopeFusionPass, ScopeMatch, ScopePattern, Structure, at_least,
    at_most, between, scope_fusion_pass,
)

__all__ = ["hookimpl", "hookspec", "TENSORFLOW", "TFLITE", "ImplyType", "OpRegistration",
           "register_op", "IrOp", "auto_mapping", "auto_mapping_dynamic", "DynamicInputOutputInfo", "PluginManager",
           "scope_fusion_pass", "ScopeFusionPass", "ScopePattern", "Structure", "ScopeMatch",
           "FusionResult", "InnerNode", "at_least", "at_most", "between", "SubgraphBuilder",
           "TfNode", "FusedTfNode", "FunctionalTfNode", "native_library", "NativeLibrary"]


def __getattr__(name):
    if name == "PluginManager":  # imported lazily: it imports the built-in plugins
        from tf2ir.plugins.manager import PluginManager
        return PluginManager
    raise AttributeError(name)
