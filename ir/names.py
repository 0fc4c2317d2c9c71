"""Fresh names: the one rule every layer uses to make a name unique (`base`, `base_1`, ...)."""

from __future__ import annotations

from typing import Callable, Container, Optional


def fresh_name(base: str, taken: Container[str],
               also_taken: Optional[Callable[[str], bool]] = None) -> str:
    """`base` if it is free, else the first free `base_1`, `base_2`, ...; a name is taken
    when it is in `taken` or `also_taken(name)` says so."""
    def busy(name: str) -> bool:
        return name in taken or (also_taken is not None and also_taken(name))

    if not busy(base):
        return base
    i = 1
    while busy(f"{base}_{i}"):
        i += 1
    return f"{base}_{i}"
