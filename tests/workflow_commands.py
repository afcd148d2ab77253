"""The workflow commands GitHub's runner would find in a step's log, read as the runner reads
them (actions/runner `src/Runner.Common/ActionCommand.cs`, `TryParseV2` then `TryParse`;
`src/Runner.Worker/ActionCommandManager.cs`): every line (ended by CR or LF) whose text after
leading white space starts with `::` and has a second `::`, and every line holding `##[` with
a `]` after it, anywhere in the line. Tests compare what they find with the commands gpuship
means to send.
"""

from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def commands_in(log: str) -> list[tuple[str, str]]:
    """(command name, rest of the line) for each line the runner would take for a command."""
    found: list[tuple[str, str]] = []
    for line in _LINE_BREAK.split(log):
        text = line.lstrip()
        end = text.find("::", 2)
        if text.startswith("::") and end >= 0:
            found.append((text[2:end].split(" ", 1)[0], text[end + 2 :]))
            continue
        start = line.find("##[")
        close = line.find("]", start) if start >= 0 else -1
        if close >= 0:
            found.append((line[start + 3 : close].split(" ", 1)[0], line[close + 1 :]))
    return found


def foreign_commands(log: str) -> list[tuple[str, str]]:
    """Commands in `log` that gpuship does not send: anything but its own annotations
    (`::error title=gpuship...`, `::warning title=gpuship...`, `::notice title=gpuship...`)."""
    own = re.compile(r"^\s*::(error|warning|notice) title=gpuship[ %:,]")
    return [
        command
        for command, line in zip(commands_in(log), _command_lines(log), strict=True)
        if not own.match(line)
    ]


def _command_lines(log: str) -> list[str]:
    return [line for line in _LINE_BREAK.split(log) if commands_in(line)]
