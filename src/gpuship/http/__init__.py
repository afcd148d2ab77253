"""HTTP adapter: the probe's open-loop load generator and readiness checks."""
