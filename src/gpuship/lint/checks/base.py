"""What a check yields, and small helpers several checks share."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpuship.dockerfile.source import Instruction, Span
from gpuship.lint.analysis import Analysis, FileSpec, Run
from gpuship.lint.shell import Command, Word
from gpuship.lint.stages import Env, Stage, State, expand
from gpuship.reference import Reference, parse_reference
from gpuship.report import Severity

WEIGHT_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".ckpt",
    ".onnx",
    ".gguf",
    ".ggml",
    ".h5",
    ".tflite",
    ".engine",
    ".plan",
    ".pb",
    ".keras",
    ".nemo",
    ".mar",
)
TRUTHY = frozenset({"1", "true", "True", "TRUE", "on", "On", "ON", "yes", "Yes", "YES"})
_PYTHON_NAME = re.compile(r"^python[0-9.]*$")


@dataclass(frozen=True)
class Hit:
    """One rule violation before config and suppressions are applied."""

    rule: str
    message: str
    span: Span
    instruction: Instruction | None  # the instruction a pragma must precede to silence it
    stage: Stage | None
    file: Path | None = None  # None: the Dockerfile; else a context file (script, requirements)
    severity: Severity | None = None  # None: the rule's (configured) severity
    fix: str | None = None


def at_word(
    rule: str, message: str, run: Run, command: Command, word: Word, **extra: object
) -> Hit:
    """A hit on a word of a command inside a RUN (or a script it runs); the message says when
    the command runs in a shell branch gpuship cannot decide, or one a --build-arg selects."""
    return Hit(
        rule,
        message + run.note(command),
        command.span(word),
        run.instruction,
        run.stage,
        command.file,
        **extra,  # type: ignore[arg-type]
    )


def at_spec(
    rule: str,
    message: str,
    run: Run,
    command: Command,
    word: Word | None,
    file: FileSpec | None,
    file_path: Path | None,
    severity: Severity | None = None,
) -> Hit:
    """A hit on a requirement: its word on the command line, or its line in the file the
    command installs from (the message then says which Dockerfile line installs it)."""
    if word is not None:
        return at_word(rule, message, run, command, word, severity=severity)
    assert file is not None  # a requirement is on the command line or in a file
    line, column = file.line, file.column
    return Hit(
        rule,
        f"{message} (installed by line {run.instruction.start_line} of the Dockerfile)"
        + run.note(command),
        Span(line, column, line, column + len(file.spec.text)),
        run.instruction,
        run.stage,
        file_path,
        severity,
    )


def at_instruction(
    rule: str, message: str, instruction: Instruction, stage: Stage | None, needle: str = ""
) -> Hit:
    """A hit on a token of an instruction's own text (the keyword when `needle` is empty)."""
    span = instruction.locate(needle, instruction.body_offset) if needle else instruction.span
    return Hit(rule, message, span, instruction, stage)


def image_reference(stage: Stage) -> Reference | None:
    """The parsed base image of a stage, or None for stages, scratch and unresolved ARGs."""
    if stage.parent is not None or not stage.base_known or stage.base.lower() == "scratch":
        return None
    return _parsed_reference(stage.base)


@functools.lru_cache(maxsize=512)
def _parsed_reference(text: str) -> Reference | None:
    # Several rules ask for the same base on every RUN: parse each text once.
    try:
        return parse_reference(text, default_tag=None)
    except Exception:  # an invalid reference is BuildKit's error to report, not ours
        return None


def image_token(stage: Stage) -> str:
    """The image text as written in FROM (before ARG substitution)."""
    return stage.from_instruction.args[0] if stage.from_instruction.args else ""


def truthy(value: str | None) -> bool:
    return value is not None and value in TRUTHY


def is_python(command: Command) -> bool:
    return bool(_PYTHON_NAME.match(command.name))


def removes(run: Run, *, paths: tuple[str, ...] = (), after: Command | None = None) -> bool:
    """True when the RUN deletes something at or under one of `paths` (rm or find -delete)
    after `after`. A command in a script the RUN runs has no known order against the RUN's
    other scripts, so there any deletion in the RUN counts."""
    places, deleted = run.per_run(_deletions)
    start = -1 if after is None or after.file is not None else places.get(id(after))
    if start is None:
        return False
    return any(
        place > start and any(_under(target, p) for p in paths) for target, place in deleted.items()
    )


def _deletions(run: Run) -> tuple[dict[int, int], dict[str, int]]:
    """Each command's first place in the RUN (by id), and each path an rm or a
    `find -delete/-exec` deletes with the last place it is deleted: one pass, so that asking
    after each of thousands of commands reads the RUN once, not once per command."""
    places: dict[int, int] = {}
    deleted: dict[str, int] = {}
    for place, command in enumerate(run.commands):
        places.setdefault(id(command), place)
        for target in _deleted(command, run.env_at(command)):
            deleted[target] = place
    return places, deleted


def _deleted(command: Command, env: Env) -> list[str]:
    """The paths `command` deletes: rm's operands, the roots a `find -delete/-exec` walks."""
    if command.name == "rm":
        return [home_path(w.text, env) for w in command.words[1:] if not w.text.startswith("-")]
    if command.name != "find" or not any(w.text in ("-delete", "-exec") for w in command.words):
        return []
    roots = []
    for word in command.words[1:]:
        if word.text.startswith(("-", "(", "!", "\\")):
            break
        roots.append(home_path(word.text, env))
    return roots


def home(env: Env) -> str:
    """$HOME as RUN commands see it: an ENV HOME, else root's."""
    return env.get("HOME") or "/root"


def user_cache(env: Env, tool: str, variable: str) -> str:
    """Where `tool` caches: its own variable, else $XDG_CACHE_HOME/tool, else ~/.cache/tool."""
    return (
        env.get(variable)
        or f"{env.get('XDG_CACHE_HOME') or home(env) + '/.cache'}".rstrip("/") + f"/{tool}"
    )


def home_path(text: str, env: Env) -> str:
    """A path word with its variables and a leading `~` expanded (unknown parts kept)."""
    value = expand(text, env)[0].replace("$HOME", home(env)).replace("${HOME}", home(env))
    if value == "~" or value.startswith("~/"):
        value = home(env) + value[1:]
    return value


def _under(argument: str, path: str) -> bool:
    cleaned = argument.rstrip("*").rstrip("/")
    return (
        cleaned == path.rstrip("/")
        or cleaned.startswith(path.rstrip("/") + "/")
        or (path.startswith(cleaned + "/") and cleaned.count("/") >= 2)
    )


def context_copies(stages: Iterable[Stage]) -> Iterator[tuple[Stage, Instruction, State]]:
    """Each COPY/ADD from the build context (no `--from`) of `stages`, with its state."""
    for stage in stages:
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            if instruction.keyword in ("COPY", "ADD") and instruction.flag("from") is None:
                yield stage, instruction, state


def final_runs(analysis: Analysis) -> Iterator[Run]:
    """RUNs of stages whose filesystem is the produced image."""
    return analysis.runs_in(analysis.build.final_chain)


def by_pipeline(commands: Iterable[Command]) -> dict[int, list[Command]]:
    """`commands` grouped by the pipeline they are in: what a command pipes into is looked for
    among its own pipeline's, not every command of the RUN (a RUN of thousands of downloads)."""
    grouped: dict[int, list[Command]] = {}
    for command in commands:
        grouped.setdefault(command.pipeline, []).append(command)
    return grouped


def first_in_chains(stages: Iterable[Stage], runs: Iterable[Run]) -> dict[int, int]:
    """For each of `stages` (in file order), the instruction index of the first of `runs` in
    it or in the stages it is built FROM: whether its filesystem holds what such a RUN did
    before a given line. One pass over the stages, not a walk up the chain for each question
    (a chain of a thousand stages asked once per stage)."""
    own: dict[int, int] = {}
    for run in runs:
        index = run.instruction.index
        own[run.stage.index] = min(own.get(run.stage.index, index), index)
    first: dict[int, int] = {}
    for stage in stages:  # a parent always comes earlier in the file, and its RUNs too
        inherited = first.get(stage.parent) if stage.parent is not None else None
        found = inherited if inherited is not None else own.get(stage.index)
        if found is not None:
            first[stage.index] = found
    return first


def reachable_runs(analysis: Analysis) -> Iterator[Run]:
    """RUNs the build of the target executes."""
    return analysis.runs_in(analysis.build.reachable)


def triggers(analysis: Analysis) -> Iterator[Run]:
    """The `ONBUILD RUN` triggers of the stages the target builds: RUNs of every image built
    FROM one of them, which is that image's final filesystem (see `Analysis.triggers_in`)."""
    return analysis.triggers_in(analysis.build.reachable)


def image_runs(analysis: Analysis) -> Iterator[Run]:
    """RUNs whose layers an image ships: the final image's, then the triggers that run in the
    images built FROM this file's stages."""
    yield from final_runs(analysis)
    yield from triggers(analysis)


def executed_runs(analysis: Analysis) -> Iterator[Run]:
    """RUNs the build of the target executes, then the triggers images built FROM its stages
    execute."""
    yield from reachable_runs(analysis)
    yield from triggers(analysis)
