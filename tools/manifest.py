"""Reading a `tf2ir batch` manifest, which may be hostile: bounded, typed, contained.

A manifest (JSON, or YAML with PyYAML) is a list of models, or {"models": [...]}, each a
path string or a mapping with the keys of `FIELDS`. `read_manifest` returns one checked
`Entry` per model or raises a one-line usage error (exit 2) naming the manifest, the entry
(#N, 1-based, and its path) and the field:

- the file is read up to `MAX_MANIFEST_BYTES` (a bigger one is refused, not read), a
  YAML one is at most `MAX_YAML_BYTES` (PyYAML takes ~4 s and ~70 MB per MiB);
- YAML aliases (`*name`, and so `<<: *name` merges) and nesting deeper than `MAX_DEPTH`
  are refused while the events are read, before anything is built, so nested aliases
  ("billion laughs") cannot blow up and deep nesting cannot overflow the C stack of
  LibYAML's composer; JSON has no aliases and its parser bounds its own recursion;
- every field has its type checked (a string, a list of strings, no NUL character, no lone
  surrogate);
- no value from the manifest is ever printed whole: `shown` cuts it to `SHOWN_CHARS`.

Where a manifest's outputs may go is decided by `inside` (batch.py calls it): the resolved
path (symlinks followed) must stay under the resolved output directory.
"""

from __future__ import annotations

import json
import os
import reprlib
from dataclasses import dataclass
from typing import Any, List, Optional

from tf2ir.ir.errors import ConversionError, ExitStatus

MAX_MANIFEST_BYTES = 16 << 20      # a JSON manifest of ~100,000 models fits
MAX_YAML_BYTES = 2 << 20           # PyYAML builds ~70 bytes of objects per byte, ~8 s per 2 MiB
SHOWN_CHARS = 80                   # at most this much of a manifest value in a message
MAX_DEPTH = 32                     # YAML nesting (a manifest needs 4: {models: [{inputs: [...]}]})
FIELDS = ("path", "inputs", "outputs", "fusion", "output")
LIST_FIELDS = ("inputs", "outputs", "fusion")

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 2, 4, 4, 4
_REPR.maxset = _REPR.maxfrozenset = 4
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = SHOWN_CHARS


@dataclass
class Entry:
    """One model of a manifest, checked; `label` names it in messages."""
    index: int                     # 1-based
    path: str
    output: Optional[str] = None   # None: the default, OUT_DIR/<model name>.onnx
    inputs: Optional[List[str]] = None     # None: the command line's default
    outputs: Optional[List[str]] = None
    fusion: Optional[List[str]] = None

    @property
    def label(self) -> str:
        return f"model #{self.index} ({shown(self.path)})"


def shown(value: Any) -> str:
    """A manifest value for a message: its repr, bounded (nested and long values cut)."""
    text = _REPR.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 1] + "…"


def _usage(message: str, manifest: str) -> ConversionError:
    return ConversionError(message, model=manifest, exit_code=ExitStatus.USAGE)


# -- the file ------------------------------------------------------------------------------
def read_text(path: str, limit: int = MAX_MANIFEST_BYTES) -> str:
    """The manifest's text: a regular file of at most `limit` bytes, UTF-8."""
    import stat
    try:
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise _usage("the manifest is not a regular file", path)
            data = f.read(limit + 1)
    except OSError as exc:
        raise ConversionError(f"cannot read the manifest: {exc.strerror or exc}",
                              model=path) from None
    if len(data) > limit:
        raise _usage(f"the manifest is over {limit >> 20} MiB; split it (batch --shard "
                     "also takes a part of one list)", path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _usage(f"the manifest is not UTF-8 text (byte {data[exc.start]:#04x} at offset "
                     f"{exc.start})", path) from None


def parse(path: str, text: str) -> Any:
    """The manifest's data (JSON, or YAML for .yaml/.yml) or a one-line usage error."""
    try:
        if path.endswith((".yaml", ".yml")):
            if len(text) > MAX_YAML_BYTES:
                raise _usage(f"a YAML manifest is at most {MAX_YAML_BYTES >> 20} MiB (reading "
                             "YAML is slow and large); write a bigger list as JSON", path)
            return _parse_yaml(path, text)
        try:
            return json.loads(text)
        except ValueError as exc:     # JSONDecodeError, and an int over Python's digit limit
            raise _usage(f"not a valid JSON manifest: {_cut(str(exc))}", path) from None
    except RecursionError:
        raise _usage("the manifest is nested too deeply", path) from None


def _parse_yaml(path: str, text: str) -> Any:
    try:
        import yaml
    except ImportError:
        raise _usage("a YAML manifest needs PyYAML (pip install pyyaml); or write the "
                     "manifest as JSON", path) from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        depth = 0
        for event in yaml.parse(text, Loader=loader):   # events only: nothing is built yet
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:   # building deeper nodes recurses (in C: a crash)
                    raise _usage(f"the manifest is nested too deeply (over {MAX_DEPTH} levels"
                                 f"{_line(event)})", path)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent):
                raise _usage(f"YAML aliases (*{_cut(str(event.anchor), 40)}) are not allowed in "
                             f"a manifest{_line(event)}; write the values out", path)
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "flow level" in first:    # libyaml's scanner may meet the nesting before we do
            raise _usage(f"the manifest is nested too deeply (over {MAX_DEPTH} levels)",
                         path) from None
        raise _usage(f"not a valid YAML manifest: {_cut(first)}", path) from None
    except (ValueError, TypeError, OverflowError, LookupError) as exc:
        # a constructor's own error: a bad date, a huge int, an empty `!!float` (IndexError)
        raise _usage(f"not a valid YAML manifest: {type(exc).__name__}: {_cut(str(exc))}",
                     path) from None


def _line(event) -> str:
    mark = event.start_mark
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""


def _cut(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


# -- the entries ---------------------------------------------------------------------------
def read_manifest(path: str) -> List[Entry]:
    """Every model of the manifest at `path`, checked (see the module's doc)."""
    data = parse(path, read_text(path))
    entries = data.get("models") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise _usage('a manifest is a list of models or {"models": [...]}', path)
    return [_entry(path, index, raw) for index, raw in enumerate(entries, 1)]


def _entry(manifest: str, index: int, raw: Any) -> Entry:
    if isinstance(raw, str):
        raw = {"path": raw}
    if not isinstance(raw, dict):
        raise _usage(f"model #{index} is {_kind(raw)} {shown(raw)}; expected a path or "
                     '{"path": ..., ...}', manifest)
    if "path" not in raw:
        raise _usage(f'model #{index} has no "path"', manifest)
    path = _string(manifest, f"model #{index}", "path", raw["path"])
    entry = Entry(index, path)
    unknown = [key for key in raw if key not in FIELDS]
    if unknown:
        raise _usage(f"{entry.label} has unknown keys {', '.join(shown(k) for k in unknown[:8])}"
                     f"; the keys are {', '.join(FIELDS)}", manifest)
    if raw.get("output") is not None:
        entry.output = _string(manifest, entry.label, "output", raw["output"])
        name = os.path.basename(entry.output)
        if name in ("", ".", ".."):
            raise _usage(f'{entry.label}: "output" {shown(entry.output)} names a directory; '
                         "give a file name (e.g. a.onnx)", manifest)
    for key in LIST_FIELDS:
        if key in raw:
            setattr(entry, key, _string_list(manifest, entry.label, key, raw[key]))
    return entry


def _string(manifest: str, label: str, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _usage(f'{label}: "{key}" must be a string, not {_kind(value)} {shown(value)}',
                     manifest)
    if not value:
        raise _usage(f'{label}: "{key}" is empty', manifest)
    problem = _problem(value)
    if problem:
        raise _usage(f'{label}: "{key}" {shown(value)} holds {problem}', manifest)
    return value


def _string_list(manifest: str, label: str, key: str, value: Any) -> List[str]:
    """A list field: a comma-separated string or a list of strings (as on the command line)."""
    if value is None:
        return []
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = list(value)
    else:
        bad = next((v for v in value if not isinstance(v, str)), value) \
            if isinstance(value, list) else value
        raise _usage(f'{label}: "{key}" must be a string or a list of strings, and holds '
                     f"{_kind(bad)} {shown(bad)}", manifest)
    problem = next((p for p in map(_problem, items) if p), None)
    if problem:
        raise _usage(f'{label}: "{key}" holds {problem}', manifest)
    return items


def _problem(value: str) -> str:
    """What keeps `value` from being a file or node name: a NUL, or a lone surrogate (JSON's
    "\\ud800": no UTF-8 text, no file name)."""
    if "\0" in value:
        return "a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "a lone surrogate (not Unicode text)"
    return ""


def _kind(value: Any) -> str:
    name = {dict: "a mapping", list: "a list", bool: "a boolean", int: "an int",
            float: "a float", type(None): "null"}.get(type(value))
    return name or f"a {type(value).__name__}"


# -- containment ---------------------------------------------------------------------------
def inside(root: str, path: str) -> bool:
    """Whether `path`, resolved (symlinks followed, '..' applied), is under `root`, resolved;
    `root` itself is not under itself."""
    real_root, real = os.path.realpath(root), os.path.realpath(path)
    try:
        return real != real_root and os.path.commonpath([real_root, real]) == real_root
    except ValueError:    # different drives (Windows)
        return False
