"""Read mapping: :func:`map_reads` and its :class:`MappingResult` (SAM output)."""

from .api import MappingResult, map_reads

__all__ = ["MappingResult", "map_reads"]
