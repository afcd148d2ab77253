"""What a build is stamped with: the commit of its candidate tag and the time it was made."""

from __future__ import annotations

import datetime
import subprocess
from collections.abc import Mapping
from pathlib import Path


def source_commit(explicit: str | None, environ: Mapping[str, str], directory: Path) -> str | None:
    """The commit the candidate tag names: `--commit`, else GITHUB_SHA, else the checkout's
    HEAD (None outside a git checkout)."""
    return explicit or environ.get("GITHUB_SHA") or _git_head(directory)


def _git_head(directory: Path) -> str | None:
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and commit else None


def build_time(environ: Mapping[str, str]) -> str:
    """RFC 3339 build time; SOURCE_DATE_EPOCH (reproducible builds) wins when set."""
    epoch = environ.get("SOURCE_DATE_EPOCH")
    moment = (
        datetime.datetime.fromtimestamp(int(epoch), tz=datetime.timezone.utc)
        if epoch and epoch.isdigit()
        else datetime.datetime.now(tz=datetime.timezone.utc)
    )
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")
