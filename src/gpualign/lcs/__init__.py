"""One query against many subjects: longest common subsequence lengths, top-N with strings."""

from .api import LcsTop, lcs_length, lcs_length_matrix, lcs_top

__all__ = ["LcsTop", "lcs_length", "lcs_length_matrix", "lcs_top"]
