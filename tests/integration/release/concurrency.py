"""One writer of the concurrency test: a gpuship command run in a worker process, so several
run at once for real (the CLI's in-process `main` writes to one stdout at a time)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

from gpuship.cli.main import main


@dataclass(frozen=True)
class Outcome:
    """A writer's exit code and JSON report (None when it stopped with an error line)."""

    name: str
    code: int
    report: dict[str, Any] | None
    stderr: str

    @property
    def record_id(self) -> str | None:
        return self.report["result"]["record"]["id"] if self.report else None

    @property
    def record_state(self) -> str | None:
        return self.report["result"]["record_state"] if self.report else None


def run_writer(name: str, argv: list[str]) -> Outcome:
    """`gpuship --format json ARGV` in this process."""
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["--format", "json", *argv], environ={}, stdout=stdout, stderr=stderr)
    text = stdout.getvalue()
    report = json.loads(text) if text.strip().startswith("{") else None
    return Outcome(name, code, report, stderr.getvalue())
