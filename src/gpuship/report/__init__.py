"""The shared Report and its renderers."""

from gpuship.report.model import CATEGORIES, Finding, Location, Report, Rule, Severity, Table

__all__ = ["CATEGORIES", "Finding", "Location", "Report", "Rule", "Severity", "Table"]
