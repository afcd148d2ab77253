"""One module per `gpuship` command: its arguments and its call into a stage."""
