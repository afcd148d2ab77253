"""The CLI's one signal handler, with real signals (`signal.raise_signal`) sent to this process
while a stand-in command runs or its report is written.

What must hold: the first SIGINT or SIGTERM stops the command; the SIGTERM GitHub Actions
sends 7.5 s after its SIGINT is the same stop and does not cut short the putting back of
tags; the same signal again (Ctrl-C twice) or a third one does. Once a command that changes a
registry has done that work, a signal does not lose its report, step outputs or exit code.

Before the fix, any second signal cut the clean-up short and a signal while the report was
written exited 130 with no report and no step outputs.
"""

from __future__ import annotations

import io
import json
import signal
import types
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuship.cli import main as cli_main
from gpuship.cli.context import Context
from gpuship.errors import Interrupted
from gpuship.report import Report

INT, TERM = signal.SIGINT, signal.SIGTERM


def _command(body: Callable[[Context], Report]) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        NAME="promote",
        HELP="stand-in",
        add_arguments=lambda parser: None,
        run=lambda args, ctx: body(ctx),
    )


def _run(
    monkeypatch: pytest.MonkeyPatch, body: Callable[[Context], Report], environ: dict[str, str]
) -> tuple[int, str, str]:
    monkeypatch.setattr(cli_main, "load_commands", lambda names=None: [_command(body)])
    out, err = io.StringIO(), io.StringIO()
    code = cli_main.main(["promote", "--format", "json"], environ=environ, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _stopped_then(*later: signal.Signals) -> tuple[Callable[[Context], Report], list[str]]:
    """A command stopped by SIGINT that then sends `later` signals while it puts back three
    tags, one signal before each; it notes each tag put back, as a release's undo would."""
    restored: list[str] = []

    def body(ctx: Context) -> Report:
        try:
            signal.raise_signal(INT)
            raise AssertionError("the first signal did not stop the command")
        except Interrupted as interrupt:
            report = Report(command="promote", result={"restored": restored})
            report.changes = True
            try:
                for index, tag in enumerate(("canary", "stable", "latest")):
                    if index < len(later):
                        signal.raise_signal(later[index])
                    restored.append(tag)
            except Interrupted as again:
                report.result["cut short by"] = again.name
            report.failed, report.failed_exit_code = True, interrupt.exit_code
            return report

    return body, restored


def test_the_runners_sigterm_after_sigint_does_not_cut_the_undo_short(
    monkeypatch: pytest.MonkeyPatch,
):
    body, restored = _stopped_then(TERM)
    code, out, _ = _run(monkeypatch, body, {})
    assert code == 130
    assert restored == ["canary", "stable", "latest"]
    assert "cut short by" not in json.loads(out)["result"]


@pytest.mark.parametrize(
    ("later", "done", "by"),
    [
        ((INT,), [], "SIGINT"),  # Ctrl-C pressed twice: stop now
        ((TERM, TERM), ["canary"], "SIGTERM"),  # a third signal: stop now
        ((TERM, INT), ["canary"], "SIGINT"),
    ],
)
def test_a_repeated_or_third_signal_stops_the_undo(
    monkeypatch: pytest.MonkeyPatch, later: tuple[signal.Signals, ...], done: list[str], by: str
):
    body, restored = _stopped_then(*later)
    code, out, _ = _run(monkeypatch, body, {})
    assert code == 130
    assert restored == done
    assert json.loads(out)["result"]["cut short by"] == by


def _finished(changes: bool) -> Callable[[Context], Report]:
    def body(ctx: Context) -> Report:
        report = Report(command="promote", result={"release": "r1"})
        report.changes = changes
        report.outputs["release-id"] = "r1"
        return report

    return body


def _signal_while_emitting(monkeypatch: pytest.MonkeyPatch, *signums: signal.Signals) -> None:
    real_emit = cli_main.emit

    def emit(*args: object, **kwargs: object) -> list[str]:
        for signum in signums:
            signal.raise_signal(signum)
        return real_emit(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cli_main, "emit", emit)


@pytest.mark.parametrize("signums", [(INT,), (TERM,), (INT, TERM)], ids=["INT", "TERM", "INT-TERM"])
def test_a_signal_after_the_registry_work_does_not_lose_the_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, signums: tuple[signal.Signals, ...]
):
    outputs = tmp_path / "outputs"
    environ = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(outputs)}
    _signal_while_emitting(monkeypatch, *signums)
    code, out, err = _run(monkeypatch, _finished(changes=True), environ)
    assert code == 0, err
    assert json.loads(out.split("\n::warning")[0])["result"] == {"release": "r1"}
    assert "release-id=r1" in outputs.read_text().splitlines()
    names = " and ".join(s.name for s in signums)
    assert f"{names} arrived after the promote had finished its registry work" in err
    assert "::warning title=gpuship::" in out


def test_a_command_may_say_its_registry_work_is_done_before_it_returns(
    monkeypatch: pytest.MonkeyPatch,
):
    def body(ctx: Context) -> Report:
        ctx.registry_work_done()
        signal.raise_signal(TERM)  # while it writes its record file, say
        return _finished(changes=True)(ctx)

    code, out, err = _run(monkeypatch, body, {})
    assert code == 0, err
    assert json.loads(out)["result"] == {"release": "r1"}
    assert "SIGTERM arrived after the promote had finished" in err


def test_insisting_still_stops_the_report(monkeypatch: pytest.MonkeyPatch):
    _signal_while_emitting(monkeypatch, INT, INT)
    code, out, err = _run(monkeypatch, _finished(changes=True), {})
    assert code == 130 and out == ""
    assert "interrupted by SIGINT" in err and "registry work had finished" in err


def test_a_command_that_changes_nothing_is_stopped_while_it_reports(
    monkeypatch: pytest.MonkeyPatch,
):
    _signal_while_emitting(monkeypatch, TERM)
    code, out, err = _run(monkeypatch, _finished(changes=False), {})
    assert code == 143 and out == ""
    assert err == "gpuship: interrupted by SIGTERM\n"


def test_each_run_starts_afresh(monkeypatch: pytest.MonkeyPatch):
    # The signals of one run (in-process, as tests call main) do not count for the next.
    _signal_while_emitting(monkeypatch, INT)
    assert _run(monkeypatch, _finished(changes=True), {})[0] == 0
    body, restored = _stopped_then(TERM)
    assert _run(monkeypatch, body, {})[0] == 130
    assert restored == ["canary", "stable", "latest"]
