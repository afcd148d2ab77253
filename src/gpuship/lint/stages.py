"""Build stages of a Dockerfile: ARG/ENV values, WORKDIR and USER per instruction, and which
stages reach the image that `docker build [--target]` produces."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gpuship.lint.source import Instruction, ParsedDockerfile

_VARIABLE = re.compile(
    r"\\\$|\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-+])(?P<word>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)
# Variables BuildKit defines in every stage, whose values depend on the build machine.
_PLATFORM_ARGS = frozenset(
    [
        "TARGETPLATFORM",
        "TARGETOS",
        "TARGETARCH",
        "TARGETVARIANT",
        "BUILDPLATFORM",
        "BUILDOS",
        "BUILDARCH",
        "BUILDVARIANT",
    ]
)

Env = Mapping[str, "str | None"]  # None: declared, value unknown until build time


def expand(text: str, env: Env) -> tuple[str, bool]:
    """Substitute `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR:+alt}` as BuildKit does.

    Returns the text and whether every variable had a known value; unknown ones are kept
    verbatim so callers can tell "unpinned" from "decided at build time".
    """
    complete = True

    def replace(match: re.Match[str]) -> str:
        nonlocal complete
        if match.group(0) == "\\$":
            return "$"
        name = match.group("braced") or match.group("bare")
        op = match.group("op")
        value = env.get(name)
        declared = name in env
        if op in (":-", "-"):
            empty = value is None or (op == ":-" and value == "")
            if declared and value is None:
                complete = False
                return match.group(0)
            if empty:
                return expand(match.group("word") or "", env)[0]
            return value or ""
        if op in (":+", "+"):
            if declared and value is None:
                complete = False
                return match.group(0)
            return expand(match.group("word") or "", env)[0] if value else ""
        if value is None:
            complete = False
            return match.group(0)
        return value

    if "$" not in text:
        return text, True
    return _VARIABLE.sub(replace, text), complete


def unquote(value: str) -> str:
    """Drop one pair of surrounding quotes, as BuildKit does for ENV/ARG/LABEL values."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


@dataclass(frozen=True)
class State:
    """What is in effect when an instruction runs."""

    env: Env  # ARG and ENV values visible to it
    env_names: frozenset[str]  # names set by ENV (they persist into the image)
    workdir: str
    user: str | None  # last USER in the stage chain, None: inherited from the base image


@dataclass(frozen=True)
class Stage:
    """One `FROM` and the instructions up to the next."""

    index: int
    name: str | None
    from_instruction: Instruction
    base: str  # the image reference after ARG substitution
    base_known: bool  # every ARG in it had a value
    parent: int | None  # index of the stage named in FROM, if any
    instructions: tuple[Instruction, ...]
    states: tuple[State, ...]  # parallel to `instructions`
    final_state: State


@dataclass(frozen=True)
class Build:
    """All stages, the global ARGs, and which stages the target needs."""

    stages: tuple[Stage, ...]
    global_args: Env
    target: int
    final_chain: tuple[int, ...]  # the target and the stages it is built FROM (target first)
    reachable: frozenset[int]  # every stage the build runs (FROM parents and COPY --from)

    def root_base(self, stage: Stage) -> Stage:
        """The first stage of `stage`'s FROM chain, whose base is an external image."""
        current = stage
        seen = set()
        while current.parent is not None and current.index not in seen:
            seen.add(current.index)
            current = self.stages[current.parent]
        return current


class TargetNotFound(ValueError):
    """`--target` names no stage."""


def build_stages(
    parsed: ParsedDockerfile, build_args: Mapping[str, str], target: str | None
) -> Build:
    """Group instructions into stages and resolve ARG/ENV/WORKDIR/USER for each."""
    global_args: dict[str, str | None] = {}
    stages: list[Stage] = []
    pending: list[Instruction] = []
    current_from: Instruction | None = None
    for instruction in parsed.instructions:
        if instruction.keyword == "FROM":
            if current_from is not None:
                stages.append(
                    _stage(len(stages), current_from, pending, stages, global_args, build_args)
                )
            current_from, pending = instruction, []
        elif current_from is None:
            if instruction.keyword == "ARG":
                for name, default in _arg_pairs(instruction):
                    value = build_args.get(name)
                    if value is None and default is not None:
                        value = expand(default, global_args)[0]
                    global_args[name] = value
        else:
            pending.append(instruction)
    if current_from is not None:
        stages.append(_stage(len(stages), current_from, pending, stages, global_args, build_args))
    return _graph(tuple(stages), global_args, target)


def _arg_pairs(instruction: Instruction) -> list[tuple[str, str | None]]:
    pairs = []
    for arg in instruction.args:
        name, sep, default = arg.partition("=")
        pairs.append((name, unquote(default) if sep else None))
    return pairs


def env_pairs(instruction: Instruction) -> list[tuple[str, str]]:
    """`ENV a=b c=d` and legacy `ENV a b` as (name, raw value) pairs."""
    args = instruction.args
    return [(args[i], unquote(args[i + 1])) for i in range(0, len(args) - 1, 2)]


def _stage(
    index: int,
    from_instruction: Instruction,
    instructions: list[Instruction],
    previous: list[Stage],
    global_args: Mapping[str, str | None],
    build_args: Mapping[str, str],
) -> Stage:
    args = from_instruction.args
    image_text = args[0] if args else ""
    name = args[2] if len(args) >= 3 and args[1].upper() == "AS" else None
    base, known = expand(image_text, {**dict.fromkeys(_PLATFORM_ARGS), **global_args})
    parent = None
    for stage in previous:
        if stage.name and stage.name.lower() == base.lower():
            parent = stage.index
    if parent is not None:
        inherited = previous[parent].final_state
        env: dict[str, str | None] = {
            k: v for k, v in inherited.env.items() if k in inherited.env_names
        }
        env_names = set(inherited.env_names)
        workdir, user = inherited.workdir, inherited.user
    else:
        env, env_names, workdir, user = {}, set(), "/", None
    for platform_arg in _PLATFORM_ARGS:
        env.setdefault(platform_arg, None)
    states: list[State] = []
    for instruction in instructions:
        state = State(dict(env), frozenset(env_names), workdir, user)
        states.append(state)
        keyword = instruction.keyword
        if keyword == "ARG":
            for arg_name, default in _arg_pairs(instruction):
                if arg_name in build_args:
                    env[arg_name] = build_args[arg_name]
                elif default is not None:
                    env[arg_name] = expand(default, env)[0]
                elif arg_name in global_args:
                    env[arg_name] = global_args[arg_name]
                else:
                    env[arg_name] = None
        elif keyword == "ENV":
            for env_name, raw in env_pairs(instruction):
                value, complete = expand(raw, env)
                env[env_name] = value if complete else None
                env_names.add(env_name)
        elif keyword == "WORKDIR" and instruction.args:
            path = expand(unquote(instruction.args[0]), env)[0]
            workdir = posixpath.normpath(posixpath.join(workdir, path))
        elif keyword == "USER" and instruction.args:
            user = expand(instruction.args[0], env)[0]
    final_state = State(dict(env), frozenset(env_names), workdir, user)
    return Stage(
        index=index,
        name=name,
        from_instruction=from_instruction,
        base=base,
        base_known=known,
        parent=parent,
        instructions=tuple(instructions),
        states=tuple(states),
        final_state=final_state,
    )


def _dependencies(stage: Stage, stages: tuple[Stage, ...]) -> set[int]:
    names = {s.name.lower(): s.index for s in stages if s.name}
    found: set[int] = set()
    if stage.parent is not None:
        found.add(stage.parent)
    for instruction, state in zip(stage.instructions, stage.states, strict=True):
        refs = []
        if instruction.keyword in ("COPY", "ADD"):
            refs.extend(instruction.flag_values("from"))
        for mount in instruction.flag_values("mount"):
            for option in mount.split(","):
                if option.startswith("from="):
                    refs.append(option[5:])
        for ref in refs:
            value = expand(ref, state.env)[0].lower()
            if value in names:
                found.add(names[value])
            elif value.isdigit() and int(value) < stage.index:
                found.add(int(value))
    return found


def _graph(stages: tuple[Stage, ...], global_args: Env, target: str | None) -> Build:
    if not stages:
        return Build((), global_args, -1, (), frozenset())
    if target is None:
        target_index = len(stages) - 1
    else:
        match = [s.index for s in stages if s.name and s.name.lower() == target.lower()]
        if not match:
            names = ", ".join(s.name for s in stages if s.name) or "none"
            raise TargetNotFound(f"target stage '{target}' not found (stages: {names})")
        target_index = match[0]
    chain = [target_index]
    while stages[chain[-1]].parent is not None:
        parent = stages[chain[-1]].parent
        if parent is None or parent in chain:
            break
        chain.append(parent)
    reachable = {target_index}
    todo = [target_index]
    while todo:
        for dependency in _dependencies(stages[todo.pop()], stages):
            if dependency not in reachable:
                reachable.add(dependency)
                todo.append(dependency)
    return Build(stages, global_args, target_index, tuple(chain), frozenset(reachable))
