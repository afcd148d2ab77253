"""Generated reference documentation."""
