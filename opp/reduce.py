"""Reductions and linear algebra beyond the basics: arg-max/min, boolean reductions, cumulative sums and products, batched matrix products, einsum."""

from __future__ import annotations
