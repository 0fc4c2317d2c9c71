"""Shape, indexing and tensor-creation ops: slicing, gathering and scattering, tiling, filling, ranges, one-hot, space/batch/depth rearrangements."""

from __future__ import annotations
