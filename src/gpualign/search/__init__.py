"""Database search (placeholder of the lead's branch; the core branch provides the package)."""
