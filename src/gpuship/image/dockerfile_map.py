"""Map image layers back to the Dockerfile lines that made them.

Layers come from the final stage's RUN, COPY and ADD instructions, in order, as BuildKit's
parser (`gpuship.dockerfile`) splits the file: heredoc bodies are not instructions, and a
continuation joins lines exactly as the history records the command. The config
history states each layer's instruction: BuildKit writes `RUN /bin/sh -c CMD # buildkit` or
`COPY SRC DST # buildkit`; the legacy builder writes `/bin/sh -c CMD` and
`/bin/sh -c #(nop) COPY file:<hash> in DST`. Matching walks both lists forward: a RUN matches
when the command text agrees, COPY/ADD when the keyword and destination agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpuship.dockerfile import DockerfileSyntaxError, DockerfileTooLarge, parse

_LAYER_KEYWORDS = ("RUN", "COPY", "ADD")
_BUILD_ARGS = re.compile(r"^\|\d+(?:\s+\S+=\S*)*\s+")
_SHELL = re.compile(r"^/bin/(?:ba)?sh -c\s+")
_FLAGS = re.compile(r"^(?:--\S+\s+)*")


@dataclass(frozen=True)
class LayerInstruction:
    """A layer-making Dockerfile instruction and the line it starts on."""

    line: int
    keyword: str
    args: str


def _squash(text: str) -> str:
    return " ".join(text.split())


def final_stage_instructions(text: str) -> list[LayerInstruction]:
    """Layer-making instructions of the last stage, with their 1-based start lines.

    A file BuildKit would refuse maps no layer.
    """
    try:
        nodes = parse(text).nodes
    except (DockerfileSyntaxError, DockerfileTooLarge):
        return []
    instructions: list[LayerInstruction] = []
    for node in nodes:
        keyword, _, args = _squash(node.original).partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            instructions = []
        elif keyword in _LAYER_KEYWORDS:
            instructions.append(LayerInstruction(node.start_line, keyword, args))
    return instructions


def _history_instruction(created_by: str) -> tuple[str, str]:
    text = _squash(created_by.removesuffix("# buildkit").strip())
    text = _BUILD_ARGS.sub("", text)
    for keyword in _LAYER_KEYWORDS:
        if text.startswith(keyword + " "):
            body = text[len(keyword) + 1 :]
            if keyword == "RUN":
                body = _SHELL.sub("", body)
            return keyword, body
    text = _SHELL.sub("", text)
    nop = re.match(r"^#\(nop\)\s+(COPY|ADD)\s+(.*)$", text)
    if nop:
        return nop.group(1), nop.group(2)
    return "RUN", text


def _destination(args: str) -> str:
    words = _FLAGS.sub("", args).split()
    return words[-1].rstrip("/") if words else ""


def _matches(instruction: LayerInstruction, keyword: str, body: str) -> bool:
    if instruction.keyword != keyword:
        return False
    if keyword == "RUN":
        command = _SHELL.sub("", _FLAGS.sub("", instruction.args))
        return bool(command) and (command in body or body in command)
    return _destination(instruction.args) == _destination(body)


def map_layers(
    created_by: Sequence[str], instructions: Sequence[LayerInstruction]
) -> list[int | None]:
    """For each layer's history text, the Dockerfile line that made it (None if unknown)."""
    lines: list[int | None] = []
    position = 0
    for text in created_by:
        keyword, body = _history_instruction(text)
        found = None
        for index in range(position, len(instructions)):
            if _matches(instructions[index], keyword, body):
                found = index
                break
        if found is None:
            lines.append(None)
            continue
        lines.append(instructions[found].line)
        position = found + 1
    return lines
