"""gpualign: GPU sequence comparison for Python, with CPU fallbacks.

Examples
--------
>>> import gpualign
>>> gpualign.edit_distance(["ACGTACGT"], ["ACGTTCGT"], backend="cpu").distance.tolist()
[1]
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .align import AlignResult, align, align_one_to_many
    from .allpairs import AllPairs, allpairs
    from .backend import BackendUnavailableError, resolve_backend
    from .cigar import PackedCigars
    from .edit import EditMatrix, EditResult, edit_distance, edit_distance_matrix
    from .io import SequenceFileError
    from .lcs import LcsTop, lcs_length, lcs_length_matrix, lcs_top
    from .map import MappingResult, map_reads
    from .mems import MemIndex, Mems, build_index, find_mems
    from .scoring import Scoring
    from .search import Database, SearchResult, search
    from .sequences import Alphabet, InvalidSymbolError, SequenceSet, get_alphabet

#: The module of every public name. Capabilities are imported when first used, so that a
#: command of one capability does not pay for importing (and compiling) the others.
_HOMES = {
    "align": ("AlignResult", "align", "align_one_to_many"),
    "allpairs": ("AllPairs", "allpairs"),
    "backend": ("BackendUnavailableError", "resolve_backend"),
    "cigar": ("PackedCigars",),
    "edit": ("EditMatrix", "EditResult", "edit_distance", "edit_distance_matrix"),
    "io": ("SequenceFileError",),
    "lcs": ("LcsTop", "lcs_length", "lcs_length_matrix", "lcs_top"),
    "map": ("MappingResult", "map_reads"),
    "mems": ("MemIndex", "Mems", "build_index", "find_mems"),
    "scoring": ("Scoring",),
    "search": ("Database", "SearchResult", "search"),
    "sequences": ("Alphabet", "InvalidSymbolError", "SequenceSet", "get_alphabet"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__version__ = "0.1.0"

__all__ = [
    "AlignResult",
    "AllPairs",
    "Alphabet",
    "BackendUnavailableError",
    "Database",
    "EditMatrix",
    "EditResult",
    "InvalidSymbolError",
    "LcsTop",
    "MappingResult",
    "MemIndex",
    "Mems",
    "PackedCigars",
    "Scoring",
    "SearchResult",
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
    "map_reads",
    "resolve_backend",
    "search",
]


class _Package(types.ModuleType):
    """The package module. Importing a subpackage binds it to the package's attribute of the
    same name; for ``align``, ``allpairs`` and ``search`` that name is the function, kept as
    it is."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _HOME_OF and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    """Import the public name (or submodule) ``name`` on first use."""
    if name in _HOME_OF:
        value = getattr(importlib.import_module(f".{_HOME_OF[name]}", __name__), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
