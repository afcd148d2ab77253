"""`gpuship.yaml`: models, loading with precise errors, and option precedence."""
