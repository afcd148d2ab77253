"""Builder output: classic engine events and BuildKit plain progress."""

from __future__ import annotations

from pathlib import Path

from gpuship.builder.build_log import ClassicBuildLog, buildkit_failure

DOCKERFILE = """\
ARG BASE_IMAGE
FROM ${BASE_IMAGE} AS deps
COPY requirements.txt /deps/

FROM ${BASE_IMAGE} AS runtime
COPY --from=deps /deps /deps
COPY app/ \\
     /app/
COPY missing.txt /x
"""


def test_classic_failure_maps_to_the_instruction_line(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(DOCKERFILE)
    log = ClassicBuildLog()
    events = [
        {"stream": "Step 1/7 : ARG BASE_IMAGE\n"},
        {"stream": "Step 2/7 : FROM ${BASE_IMAGE} AS deps\n ---> 1a2b\n"},
        {"stream": "Step 3/7 : COPY requirements.txt /deps/\n"},
        {"stream": " ---> Using cache\n ---> 3c4d\n"},
        {"stream": "Step 7/7 : COPY missing.txt /x\n"},
        {
            "errorDetail": {"message": "COPY failed: file not found in build context"},
            "error": "COPY failed: file not found in build context",
        },
    ]
    lines = [line for event in events for line in log.feed(event)]
    assert "Step 3/7 : COPY requirements.txt /deps/" in lines
    assert log.cached_steps == ["COPY requirements.txt /deps/"]
    assert log.error == "COPY failed: file not found in build context"
    failure = log.failure(dockerfile)
    assert failure.line == 9
    assert failure.step == "COPY missing.txt /x"


def test_continued_instruction_maps_to_its_first_line(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(DOCKERFILE)
    log = ClassicBuildLog()
    log.feed({"stream": "Step 6/7 : COPY app/      /app/\n"})
    log.feed({"error": "boom"})
    assert log.failure(dockerfile).line == 7


def test_success_records_the_image_id() -> None:
    log = ClassicBuildLog()
    log.feed({"aux": {"ID": "sha256:" + "c" * 64}})
    assert log.image_id == "sha256:" + "c" * 64 and log.error is None


def test_buildkit_failure_reads_the_file_line_and_error() -> None:
    output = [
        "#8 [runtime 3/3] RUN false",
        '#8 ERROR: process "/bin/sh -c false" did not complete successfully: exit code: 1',
        "------",
        "Dockerfile.train:12",
        "--------------------",
        "  12 | >>> RUN false",
        "--------------------",
        'ERROR: failed to solve: process "/bin/sh -c false" did not complete successfully',
    ]
    failure = buildkit_failure(output, "docker/Dockerfile.train")
    assert failure.line == 12
    assert failure.message.startswith("failed to solve: process")
