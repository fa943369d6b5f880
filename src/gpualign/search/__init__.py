"""Database search: the best local alignments of queries in a protein or DNA database, with
bit scores and E-values."""

from .api import SearchResult, search
from .database import Database, as_database

__all__ = ["Database", "SearchResult", "as_database", "search"]
