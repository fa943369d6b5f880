"""Database search: the best local alignments of queries against a database."""
