"""What `gpuship lint --image REF` calls: the image checks, as findings the lint report merges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpuship.cli.context import Context
from gpuship.report import Finding, Rule


def image_lint_findings(
    reference: str,
    ctx: Context,
    *,
    platform: str | None = None,
    dockerfile: Path | None = None,
) -> tuple[list[Finding], dict[str, Rule], dict[str, Any]]:
    """(findings, their rule catalog entries, the image result) for `reference`.

    Findings point at the Dockerfile line that made the layer when `dockerfile` is given.
    """
    from gpuship.image.run import inspect_and_judge

    judgement = inspect_and_judge(reference, ctx, platform=platform, dockerfile=dockerfile)
    return judgement.findings, judgement.rules, judgement.result
