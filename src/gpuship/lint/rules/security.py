"""Security: secrets in ARG/ENV, remote scripts piped to a shell, root as the final user."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from gpuship.lint.analysis import Analysis
from gpuship.lint.rules.base import Hit, at_instruction, at_word, reachable_runs
from gpuship.lint.shell import SHELLS
from gpuship.lint.source import Instruction
from gpuship.lint.stages import Stage, env_pairs

_SECRET_PARTS = frozenset({"TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "CREDENTIALS", "PAT"})
_SECRET_PAIRS = frozenset(
    {
        ("API", "KEY"),
        ("ACCESS", "KEY"),
        ("PRIVATE", "KEY"),
        ("SECRET", "KEY"),
        ("AUTH", "KEY"),
        ("SERVICE", "KEY"),
    }
)
_NOT_SECRET_SUFFIX = frozenset(
    {
        "FILE",
        "PATH",
        "DIR",
        "URL",
        "ENDPOINT",
        "NAME",
        "TYPE",
        "ENABLED",
        "LENGTH",
        "LIMIT",
        "COUNT",
        "HEADER",
        "URI",
    }
)


def is_secret_name(name: str) -> bool:
    """True for names like HF_TOKEN, WANDB_API_KEY, AWS_SECRET_ACCESS_KEY."""
    parts = [p for p in re.split(r"[_\-]", name.upper()) if p]
    if not parts or parts[-1] in _NOT_SECRET_SUFFIX:
        return False
    if any(p in _SECRET_PARTS for p in parts):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(parts))


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL901-903: secrets in ARG/ENV, remote scripts piped to a shell, root user."""
    yield from _secrets(analysis)
    yield from _piped_scripts(analysis)
    yield from _root_user(analysis)


def _stage_of(analysis: Analysis, index: int) -> Stage | None:
    owner = None
    for stage in analysis.stages:
        if stage.from_instruction.index <= index:
            owner = stage
    return owner


def _secrets(analysis: Analysis) -> Iterator[Hit]:
    for instruction in analysis.parsed.instructions:
        if instruction.keyword == "ARG":
            names = [a.split("=", 1)[0] for a in instruction.args]
            pairs = [(n, "") for n in names]
        elif instruction.keyword == "ENV":
            pairs = [(n, v) for n, v in env_pairs(instruction) if v]
        else:
            continue
        for name, _value in pairs:
            if is_secret_name(name):
                stored = "image history" if instruction.keyword == "ARG" else "image config"
                yield at_instruction(
                    "GSL901",
                    f"{instruction.keyword} {name} puts a credential in the {stored}, readable "
                    "by anyone who pulls the image; use RUN --mount=type=secret",
                    instruction,
                    _stage_of(analysis, instruction.index),
                    name,
                )


def _piped_scripts(analysis: Analysis) -> Iterator[Hit]:
    for run in reachable_runs(analysis):
        commands = list(run.commands)
        for command in commands:
            if command.name not in ("curl", "wget"):
                continue
            for other in commands:
                if (
                    other.pipeline == command.pipeline
                    and other.position > command.position
                    and (other.name in SHELLS or other.name.startswith("python"))
                ):
                    yield at_word(
                        "GSL902",
                        f"`{command.name} ... | {other.name}` runs whatever "
                        "the server returns, unverified",
                        run,
                        other,
                        other.words[0],
                    )
                    break
        for command in commands:
            if command.name in SHELLS and any(
                "$(curl" in w.text or "$(wget" in w.text for w in command.words
            ):
                yield at_word(
                    "GSL902",
                    f'`{command.name} -c "$(curl ...)"` runs whatever the '
                    "server returns, unverified",
                    run,
                    command,
                    command.words[0],
                )


def _root_user(analysis: Analysis) -> Iterator[Hit]:
    if not analysis.build.final_chain:
        return
    target = analysis.build.stages[analysis.build.target]
    user = target.final_state.user
    if user is None:
        yield at_instruction(
            "GSL903",
            "the final stage sets no USER: the image runs as root unless its base sets a user",
            target.from_instruction,
            target,
        )
        return
    if user.split(":", 1)[0] in ("root", "0"):
        last = next(i for i in reversed(_chain_instructions(analysis)) if i.keyword == "USER")
        yield at_instruction(
            "GSL903",
            f"the final USER is {user}: the image runs as root",
            last,
            _stage_of(analysis, last.index),
            user,
        )


def _chain_instructions(analysis: Analysis) -> list[Instruction]:
    result: list[Instruction] = []
    for index in reversed(analysis.build.final_chain):
        result.extend(analysis.build.stages[index].instructions)
    return result
