"""The `gpuship` command line."""
