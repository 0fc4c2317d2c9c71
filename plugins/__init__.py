"""The plugin system: hookspecs, the plugin manager, `register_op`, `auto_mapping` and scope fusion passes.
The built-in TensorFlow plugins live in `builtin/`, written as a third-party package would."""

from tf2ir.plugins.spec import hookimpl, hookspec
from tf2ir.plugins.registry import TENSORFLOW, ImplyType, OpRegistration, register_op
from tf2ir.plugins.mapping import DynamicInputOutputInfo, IrOp, auto_mapping, auto_mapping_dynamic
from tf2ir.plugins.subgraph import SubgraphBuilder
from tf2ir.plugins.fusion import (
    FusionResult, InnerNode, ScopeFusionPass, ScopeMatch, ScopePattern, Structure, at_least,
    at_most, between, scope_fusion_pass,
)

__all__ = ["hookimpl", "hookspec", "TENSORFLOW", "ImplyType", "OpRegistration",
           "register_op", "IrOp", "auto_mapping", "auto_mapping_dynamic", "DynamicInputOutputInfo", "PluginManager",
           "scope_fusion_pass", "ScopeFusionPass", "ScopePattern", "Structure", "ScopeMatch",
           "FusionResult", "InnerNode", "at_least", "at_most", "between", "SubgraphBuilder"]


def __getattr__(name):
    if name == "PluginManager":  # imported lazily: it imports the built-in plugins
        from tf2ir.plugins.manager import PluginManager
        return PluginManager
    raise AttributeError(name)
