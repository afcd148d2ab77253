"""NVML adapter: what the driver says about this host's GPUs, read through `pynvml`."""
