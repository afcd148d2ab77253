"""Read what an image builder prints: progress lines, cache hits, and where it failed.

Two builders are understood:

- the engine's classic builder (Docker API `POST /build`, as the docker SDK streams it):
  `Step 3/7 : RUN ...`, ` ---> Using cache`, and an `error`/`errorDetail` event at the end
  (moby `builder/dockerfile/evaluator.go` prints `Step N/M : <instruction as written>`);
- BuildKit through `docker buildx build --progress=plain`, whose failure report names the
  Dockerfile line itself (`Dockerfile:12` above a `>>>` excerpt) and ends with `ERROR: ...`.

The failing step is mapped to a Dockerfile line so it becomes an annotation on that line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

_STEP = re.compile(r"^Step (\d+)/(\d+) : (.*)$")
_USING_CACHE = " ---> Using cache"
_BUILDKIT_FILE_LINE = re.compile(r"^(?P<file>[^\s:][^\s]*?):(?P<line>\d+)$")
_KEEP_LINES = 40
# BuildKit's words for a push the registry turned down (vs a failed build step).
_PUSH_REFUSED = ("failed to push", "push access denied", "unauthorized", "denied:")


@dataclass(frozen=True)
class BuildFailure:
    """The builder's own error: its message, the step it ran, and the Dockerfile line."""

    message: str
    step: str | None = None
    step_number: int | None = None
    line: int | None = None
    output: tuple[str, ...] = ()


@dataclass
class ClassicBuildLog:
    """Accumulates the classic builder's JSON events into steps, cache hits and a result."""

    steps: list[str] = field(default_factory=list)
    cached_steps: list[str] = field(default_factory=list)
    image_id: str | None = None
    error: str | None = None
    # What the current step printed (a RUN command's own output), for the failure report.
    step_output: list[str] = field(default_factory=list)

    def feed(self, event: dict[str, object]) -> list[str]:
        """Take one decoded event; return the progress lines it produced (maybe none)."""
        lines: list[str] = []
        stream = event.get("stream")
        if isinstance(stream, str):
            for raw in stream.splitlines():
                line = raw.rstrip()
                if not line.strip():
                    continue
                step = _STEP.match(line)
                if step:
                    self.steps.append(step.group(3))
                    self.step_output = []
                    lines.append(line)
                elif line.startswith(_USING_CACHE) and self.steps:
                    self.cached_steps.append(self.steps[-1])
                    lines.append(line.strip())
                elif not line.startswith(" ---> ") and not line.startswith("Removing interm"):
                    self.step_output.append(line)
                    del self.step_output[:-_KEEP_LINES]
                    lines.append(line)
        aux = event.get("aux")
        if isinstance(aux, dict) and isinstance(aux.get("ID"), str):
            self.image_id = str(aux["ID"])
        error = event.get("error")
        detail = event.get("errorDetail")
        if isinstance(detail, dict) and isinstance(detail.get("message"), str):
            error = detail["message"]
        if isinstance(error, str):
            self.error = error.strip()
            lines.append(f"ERROR: {self.error}")
        return lines

    def failure(self, dockerfile: Path) -> BuildFailure:
        """The failure (call when `error` is set), mapped to its Dockerfile line."""
        step = self.steps[-1] if self.steps else None
        number = len(self.steps) or None
        return BuildFailure(
            message=self.error or "the builder failed without a message",
            step=step,
            step_number=number,
            line=_line_of_step(dockerfile, step, number),
            output=tuple(self.step_output),
        )


def _normalise(text: str) -> str:
    return " ".join(text.split()).lower()


def _line_of_step(dockerfile: Path, step: str | None, number: int | None) -> int | None:
    """The first line of the instruction the classic builder ran as step `number`.

    The step text is the instruction as written; it is matched against the parsed Dockerfile,
    and when several instructions read the same, the one nearest to the step number wins.
    """
    if step is None:
        return None
    # The Dockerfile parser, loaded only when a build failed.
    from gpuship.dockerfile.source import read_dockerfile

    try:
        parsed = read_dockerfile(dockerfile)
    except OSError:
        return None
    wanted = _normalise(step)
    matches = [i for i in parsed.instructions if _normalise(i.text.value) == wanted]
    if not matches:
        return None
    position = (number or 1) - 1
    return min(matches, key=lambda i: abs(i.index - position)).start_line


def buildkit_failure(output: Sequence[str], dockerfile_name: str) -> BuildFailure:
    """The failure BuildKit reported in plain progress output (`docker buildx build`)."""
    line: int | None = None
    message = "the build failed"
    name = Path(dockerfile_name).name
    for text in output:
        stripped = text.strip()
        found = _BUILDKIT_FILE_LINE.match(stripped)
        if found and Path(found.group("file")).name == name:
            line = int(found.group("line"))
        if stripped.startswith("ERROR:"):
            message = stripped[len("ERROR:") :].strip()
    return BuildFailure(message=message, line=line, output=tuple(output[-_KEEP_LINES:]))


def push_refused(failure: BuildFailure) -> bool:
    """True when BuildKit built the image but the registry refused the push."""
    return any(marker in failure.message.lower() for marker in _PUSH_REFUSED)
