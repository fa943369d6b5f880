"""Edit distance (Levenshtein) with Myers' bit-vector algorithm on CPU and CUDA."""

from .api import EditMatrix, EditResult, edit_distance, edit_distance_matrix

__all__ = ["EditMatrix", "EditResult", "edit_distance", "edit_distance_matrix"]
