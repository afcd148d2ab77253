"""Adapter: this machine as an audit reads it: the container toolkit's files and tools, the OS,
and who the machine is (see container.py, system.py)."""
