"""The plugin system: hookspecs, the plugin manager, `register_op` and `auto_mapping`.
The built-in TensorFlow plugins live in `builtin/`, written as a third-party package would."""

from tf2ir.plugins.spec import hookimpl, hookspec
from tf2ir.plugins.registry import TENSORFLOW, ImplyType, OpRegistration, register_op
from tf2ir.plugins.mapping import DynamicInputOutputInfo, IrOp, auto_mapping, auto_mapping_dynamic

__all__ = ["hookimpl", "hookspec", "TENSORFLOW", "ImplyType", "OpRegistration",
           "register_op", "IrOp", "auto_mapping", "auto_mapping_dynamic", "DynamicInputOutputInfo", "PluginManager"]


def __getattr__(name):
    if name == "PluginManager":  # imported lazily: it imports the built-in plugins
        from tf2ir.plugins.manager import PluginManager
        return PluginManager
    raise AttributeError(name)
