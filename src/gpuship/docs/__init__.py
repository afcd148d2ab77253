"""Generated reference documentation: actions, rules, `gpuship.yaml`, `--format json` results."""
