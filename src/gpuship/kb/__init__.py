"""The CUDA knowledge base as a stage (`gpuship kb`): lookups and checks that build Reports."""
