"""Read mapping."""
