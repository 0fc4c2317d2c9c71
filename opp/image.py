"""Image and convolution ops beyond the basics: transposed and 3-D convolutions, 3-D pooling, batch normalization, resizing, non-max suppression, local response normalization."""

from __future__ import annotations
