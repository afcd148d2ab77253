"""Probe stage: a candidate image under open-loop load and memory pressure, judged on its tail."""
