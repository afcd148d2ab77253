"""gpuship: keep GPU container images for AI/ML healthy from pull request to production."""

__version__ = "0.1.0"
