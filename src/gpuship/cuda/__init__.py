"""CUDA knowledge base (drivers, compatibility, GPUs, arch support, torch wheels) and the
`NVIDIA_REQUIRE_*` evaluator. Data lives in `data/knowledge.yaml`, one source per row."""
