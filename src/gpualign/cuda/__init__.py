"""Shared GPU plumbing: the kernel loader and batching by free device memory."""
