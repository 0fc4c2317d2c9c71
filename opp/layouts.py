"""Data and filter layouts (DESIGN decision 8: the formats a plugin sets decide them) and the
checks of window attributes laid out in them."""

from __future__ import annotations

from typing import List, Optional, Sequence

from tf2ir.ir import ConversionError

NHWC_TO_NCHW = [0, 3, 1, 2]
NCHW_TO_NHWC = [0, 2, 3, 1]
CHANNELS_LAST = {4: "NHWC", 5: "NDHWC"}
CHANNELS_FIRST = {4: "NCHW", 5: "NCDHW"}
TF_FILTER = {4: "HWCN", 5: "DHWCN"}     # spatial dims, in channels (C), out channels (N)


def spatial_attrs(values: Sequence[int], data_format: str) -> List[int]:
    """The spatial entries of a 4-/5-element TF attribute laid out in `data_format`."""
    return list(values[1:-1]) if data_format.endswith("C") else list(values[2:])


def check_layout_declared(node, index: int) -> None:
    """Refuse an input without a format (ND) whose node says channels-first in a TF-style
    `data_format` attribute: formats alone decide layouts, and reading such data as
    channels-last would convert it silently wrong."""
    said = node.attrs.get("data_format")
    if isinstance(said, str) and said.startswith("NC"):
        raise ConversionError(f"input {index} has no format (ND) while data_format says {said}: "
                              "layouts are read from formats only; the plugin must declare it "
                              f"(op.set_input_format({index}, {said!r}))")


def data_layout(node, index: int = 0, rank: Optional[int] = None) -> str:
    """The layout of data input `index`, read from its format: NHWC or NCHW (4-D), NDHWC or
    NCDHW (5-D). An undeclared (ND) format is TF's channels-last layout of the input's rank
    (`rank` when the input's is unknown)."""
    desc = node.inputs[index].desc
    rank = desc.rank if desc.rank is not None else rank
    fmt = desc.format
    if fmt == "ND":
        check_layout_declared(node, index)
        if rank not in CHANNELS_LAST:
            raise ConversionError(f"input {index} has no format (ND) and rank {rank}: "
                                  "a layout needs 4-D or 5-D data")
        return CHANNELS_LAST[rank]
    if fmt not in (CHANNELS_LAST.get(len(fmt)), CHANNELS_FIRST.get(len(fmt))):
        raise ConversionError(f"input {index} has format {fmt}: data must be NHWC, NCHW, NDHWC "
                              "or NCDHW")
    if rank is not None and rank != len(fmt):
        raise ConversionError(f"input {index} has format {fmt} but rank {rank}")
    return fmt


def filter_layout(node, index: int, rank: int) -> str:
    """The layout of the rank-`rank` convolution filter at input `index`, read from its format:
    TF's HWCN (DHWCN), or the same letters channels-first or -last (NCHW, NHWC; NCDHW,
    NDHWC), N being the output and C the input channels. Undeclared (ND) is TF's."""
    fmt = node.inputs[index].desc.format
    if fmt == "ND":
        return TF_FILTER[rank]
    if fmt not in (TF_FILTER[rank], CHANNELS_FIRST[rank], CHANNELS_LAST[rank]):
        raise ConversionError(f"the filter (input {index}) has format {fmt}: a {rank}-D filter "
                              f"must be {TF_FILTER[rank]}, {CHANNELS_FIRST[rank]} or "
                              f"{CHANNELS_LAST[rank]}")
    return fmt


def check_window_attrs(node, rank: int) -> None:
    """A window op's `strides` and `ksize` need one value per data dim and, like
    `dilations`, values of at least 1 (a zero stride would divide by zero)."""
    for name in ("strides", "ksize", "dilations"):
        values = node.attrs.get(name)
        if values is None or (name == "dilations" and not values):
            continue
        if name != "dilations" and len(values) != rank:
            raise ConversionError(f"attribute '{name}' has {len(values)} values; {rank}-D data "
                                  f"needs {rank}")
        if any(v < 1 for v in values):
            raise ConversionError(f"attribute '{name}' is {list(values)}: every value must be "
                                  "at least 1")
