"""Fetch the embedding model into ./models at build time."""

from huggingface_hub import snapshot_download

snapshot_download("org/embedder", local_dir="models/embedder")
