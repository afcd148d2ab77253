"""act runs workflows on this host offline, passes the test's environment and inputs through,
reports failures by exit code, and refuses to pass silently when it skipped a job."""

from __future__ import annotations

import pytest

from bed.act import ActJobSkipped, ActRunner

pytestmark = pytest.mark.integration

STEP_WORKFLOW = """\
name: bed act
on:
  workflow_dispatch:
    inputs:
      greeting:
        required: true
jobs:
  host:
    runs-on: [self-hosted, linux, gpu]
    steps:
      - uses: actions/checkout@v4
      - env:
          GREETING: ${{ inputs.greeting }}
        run: |
          echo "greeting=$GREETING bed=$BED_MARKER secret=${{ secrets.BED_TOKEN != '' }}"
          cat data/input.txt
"""


def test_act_passes_env_inputs_files_and_secrets(act: ActRunner) -> None:
    result = act(
        STEP_WORKFLOW,
        "workflow_dispatch",
        files={"data/input.txt": "from the repository\n"},
        env={"BED_MARKER": "marker-7"},
        inputs={"greeting": "hello"},
        secrets={"BED_TOKEN": "s3cr3t-value"},
    )
    assert result.succeeded, result.log[-3000:]
    assert "greeting=hello bed=marker-7 secret=true" in result.log
    assert "from the repository" in result.log
    assert "s3cr3t-value" not in result.log


def test_failing_step_fails_the_run(act: ActRunner) -> None:
    result = act(
        "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: exit 3\n"
    )
    assert result.returncode == 1
    assert not result.succeeded
    assert "Job failed" in result.log


def test_unmapped_runner_label_is_an_error_not_a_pass(act: ActRunner) -> None:
    with pytest.raises(ActJobSkipped, match="windows-latest"):
        act("on: push\njobs:\n  j:\n    runs-on: windows-latest\n    steps:\n      - run: 'true'\n")
