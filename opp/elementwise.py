"""Elementwise ops beyond the basic arithmetic: more unary math, integer division, comparisons, logical and bitwise ops, selection and clipping."""

from __future__ import annotations
