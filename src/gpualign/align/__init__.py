"""Pairwise alignment with a scoring scheme: NW, SW, semi-global and overlap, affine gaps."""

from .api import AlignResult, align

__all__ = ["AlignResult", "align"]
