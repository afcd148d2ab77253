"""The shared Report and its renderers."""

from gpuship.report.model import (
    CATEGORIES,
    Chart,
    Finding,
    Location,
    Report,
    Rule,
    Series,
    Severity,
    Table,
)

__all__ = [
    "CATEGORIES",
    "Chart",
    "Finding",
    "Location",
    "Report",
    "Rule",
    "Series",
    "Severity",
    "Table",
]
