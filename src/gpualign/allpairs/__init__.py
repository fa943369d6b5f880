"""All-vs-all comparison with an identity filter."""

from .api import AllPairs, CheckpointWarning, allpairs

__all__ = ["AllPairs", "CheckpointWarning", "allpairs"]
