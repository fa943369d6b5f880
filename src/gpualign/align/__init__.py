"""Pairwise alignment with a scoring scheme: NW, SW, semi-global and overlap, affine gaps."""

from .api import AlignResult, align, align_one_to_many

__all__ = ["AlignResult", "align", "align_one_to_many"]
