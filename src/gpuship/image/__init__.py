"""Image stage: read a built image without pulling it and report what it really contains."""
