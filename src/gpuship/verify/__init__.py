"""Verify stage: can this GPU host run this image? (`gpuship audit`, `verify`, `fleet`)."""
