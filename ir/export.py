"""What a user asks of the ONNX model a conversion writes, beyond what it computes: the target
opset, channels-first inputs and outputs, renamed inputs and outputs, half precision, and int8
from quantization-aware graphs. One object, `ExportOptions`, travels from the command line or
`tf2ir.convert(...)` into `compile`; each part is applied by its own module:

- `opset`: lowerings' forms and ir/onnx/forms.py (ir/onnx/target.py);
- `inputs_as_nchw`, `outputs_as_nchw`, `rename_inputs`, `rename_outputs`: the IR graph's
  interface, before the passes (ir/io_options.py);
- `precision`, `weights`, `io_precision`: the ONNX graph after its passes (ir/onnx/precision.py);
- `quantized`: the lowerings of fake-quantization ops read it from their context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus

PRECISIONS = ("fp32", "fp16")
QUANTIZED = ("exact", "qdq")


@dataclass
class ExportOptions:
    """The ONNX-side options of one conversion (defaults: the model as TF computes it)."""

    opset: Optional[int] = None                  # None: the lowest opset >= 18 holding every op
    inputs_as_nchw: Tuple[str, ...] = ()         # graph inputs the model takes channels-first
    outputs_as_nchw: Tuple[str, ...] = ()        # graph outputs it gives channels-first
    rename_inputs: Dict[str, str] = field(default_factory=dict)    # old name -> new name
    rename_outputs: Dict[str, str] = field(default_factory=dict)
    precision: str = "fp32"                      # "fp16": weights and compute in float16
    weights: str = "fp32"                        # "fp16": weights stored in float16 only
    io_precision: str = "fp32"                   # "fp16": float inputs/outputs in float16 too
    quantized: str = "exact"                     # "qdq": fake-quant ops as Q/DQ pairs

    def check(self) -> "ExportOptions":
        """Refuse bad values at once (exit status 2), before any work (the opset's range is
        the ONNX side's to check: ir/onnx/forms.py, check_opset)."""
        def usage(message: str) -> ConversionError:
            return ConversionError(message, exit_code=ExitStatus.USAGE)
        if self.opset is not None and (isinstance(self.opset, bool)
                                       or not isinstance(self.opset, int)):
            raise usage(f"opset {self.opset!r} is not an integer")
        for name, value, allowed in (("precision", self.precision, PRECISIONS),
                                     ("weights", self.weights, PRECISIONS),
                                     ("io_precision", self.io_precision, PRECISIONS),
                                     ("quantized", self.quantized, QUANTIZED)):
            if value not in allowed:
                raise usage(f"{name} {value!r} is not one of {', '.join(allowed)}")
        if self.io_precision != "fp32" and self.precision == "fp32":
            raise usage("--io-precision fp16 needs --precision fp16")
        for what, renames in (("inputs", self.rename_inputs), ("outputs", self.rename_outputs)):
            news = list(renames.values())
            if len(set(news)) != len(news):
                raise usage(f"rename_{what} gives two {what} the same new name")
            if any(not isinstance(n, str) or not n for n in list(renames) + news):
                raise usage(f"rename_{what} names must be non-empty strings")
        return self

    @property
    def default(self) -> bool:
        return self == ExportOptions()


def parse_renames(text: Optional[str], option: str) -> Dict[str, str]:
    """'a:x,b:y' -> {'a': 'x', 'b': 'y'} (a usage error names `option` otherwise)."""
    renames: Dict[str, str] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        old, sep, new = item.rpartition(":")
        if not sep or not old.strip() or not new.strip():
            raise ConversionError(f"bad {option} value {item!r}; expected OLD:NEW,...",
                                  exit_code=ExitStatus.USAGE)
        if old.strip() in renames:
            raise ConversionError(f"{option} renames {old.strip()!r} twice",
                                  exit_code=ExitStatus.USAGE)
        renames[old.strip()] = new.strip()
    return renames


METADATA_KEY = "tf2ir.export"


def record(model, export: ExportOptions):
    """Write the options that change the model's interface or numbers into the ONNX model's
    metadata (`tf2ir.export`, JSON of the fields that differ from the default), so that
    `tf2ir verify --onnx` feeds and compares it as it was converted. Returns `model`."""
    import json
    from dataclasses import asdict
    changed = {k: v for k, v in asdict(export).items()
               if v != getattr(ExportOptions(), k) and k != "opset"}
    if changed:
        entry = model.metadata_props.add()
        entry.key, entry.value = METADATA_KEY, json.dumps(changed, sort_keys=True)
    return model


def recorded(model) -> ExportOptions:
    """The ExportOptions `record` wrote into `model` (defaults where it wrote none; an
    entry that does not parse as such counts as none)."""
    import json
    for entry in model.metadata_props:
        if entry.key == METADATA_KEY:
            try:
                fields: Dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                                          for k, v in json.loads(entry.value).items()
                                          if k in ExportOptions.__dataclass_fields__}
                return ExportOptions(**fields).check()
            except (ValueError, TypeError, ConversionError):
                break
    return ExportOptions()
