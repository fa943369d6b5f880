"""gpualign: GPU sequence comparison for Python, with CPU fallbacks.

Examples
--------
>>> import gpualign
>>> gpualign.edit_distance(["ACGTACGT"], ["ACGTTCGT"], backend="cpu").distance.tolist()
[1]
"""

from .align import AlignResult, align, align_one_to_many
from .allpairs import AllPairs, allpairs
from .backend import BackendUnavailableError, resolve_backend
from .edit import EditMatrix, EditResult, edit_distance, edit_distance_matrix
from .io import SequenceFileError
from .lcs import LcsTop, lcs_length, lcs_length_matrix, lcs_top
from .mems import MemIndex, Mems, build_index, find_mems
from .scoring import Scoring
from .sequences import Alphabet, InvalidSymbolError, SequenceSet, get_alphabet

__version__ = "0.1.0"

__all__ = [
    "AlignResult",
    "AllPairs",
    "Alphabet",
    "BackendUnavailableError",
    "EditMatrix",
    "EditResult",
    "InvalidSymbolError",
    "LcsTop",
    "MemIndex",
    "Mems",
    "Scoring",
    "SequenceFileError",
    "SequenceSet",
    "align",
    "align_one_to_many",
    "allpairs",
    "build_index",
    "edit_distance",
    "edit_distance_matrix",
    "find_mems",
    "get_alphabet",
    "lcs_length",
    "lcs_length_matrix",
    "lcs_top",
    "resolve_backend",
]
