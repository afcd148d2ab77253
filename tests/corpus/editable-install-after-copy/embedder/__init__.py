"""Embeddings over HTTP."""
