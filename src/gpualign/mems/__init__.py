"""Maximal exact matches between reads and a reference (MUMmer's -maxmatch)."""

from .api import Mems, find_mems
from .index import MemIndex, build_index

__all__ = ["MemIndex", "Mems", "build_index", "find_mems"]
