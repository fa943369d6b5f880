"""All-vs-all comparison with an identity filter."""

from .api import AllPairs, allpairs

__all__ = ["AllPairs", "allpairs"]
