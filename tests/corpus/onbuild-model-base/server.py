"""Serves the model the per-model image put under /srv/model."""
