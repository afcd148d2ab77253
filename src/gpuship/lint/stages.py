"""Build stages of a Dockerfile: ARG/ENV values, WORKDIR and USER per instruction, and which
stages reach the image that `docker build [--target]` produces.

BuildKit's automatic platform ARGs (TARGETARCH, BUILDPLATFORM...) take the values of the
platform given (`--platform`, else the machine gpuship runs on), as BuildKit gives them: in the
global scope (FROM lines) always, inside a stage only after `ARG TARGETARCH` declares them.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import platform as _platform
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from immutables import Map

from gpuship.dockerfile.shellwords import LexError, process_word
from gpuship.dockerfile.source import Instruction, ParsedDockerfile
from gpuship.limits import DEFAULT_LIMITS, Limits

# What BuildKit takes as a stage name (`FROM img AS name`); an image reference has `/`, `:`...
_STAGE_NAME = re.compile(r"[a-z][a-z0-9_.-]*")
_VARIABLE = re.compile(
    r"\\\$|\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-+])(?P<word>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)
# `platform.machine()` -> the architecture (and variant) Docker names platforms by.
_MACHINES = {
    "x86_64": "amd64",
    "amd64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "armv7l": "arm/v7",
    "armv6l": "arm/v6",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
    "riscv64": "riscv64",
    "i686": "386",
    "i386": "386",
}

_PATH_MAX = 4096  # Linux's limit on a path, its terminating NUL included
Env = Mapping[str, "str | None"]  # None: declared, value unknown until build time
# The ARG/ENV values of a stage as it runs: a persistent map (a HAMT, as contextvars use), so
# each instruction's state shares every value it did not change. A dict per instruction made
# a stage of n ARGs cost n*n/2 entries: 8,000 ARG lines (200 KB) took 900 MB.
Values = Map[str, "str | None"]
_NO_VALUES: Values = Map()


class _TooLong(Exception):
    """An expansion would pass `expansion-max-bytes` (ARG values that double on each line)."""


def expand(
    text: str, env: Env, max_bytes: int = DEFAULT_LIMITS.expansion_max_bytes
) -> tuple[str, bool]:
    """Substitute `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR:+alt}` as BuildKit does.

    Returns the text and whether every variable had a known value; unknown ones are kept
    verbatim so callers can tell "unpinned" from "decided at build time". A `${X:-word}` whose
    X has no value takes `word`, the value the build uses unless told otherwise. A result
    longer than `max_bytes` is never built: the text comes back as is, incomplete.
    """
    try:
        return _substitute(text, env, max_bytes)
    except _TooLong:
        return text, False


def _substitute(text: str, env: Env, max_bytes: int) -> tuple[str, bool]:
    complete = True
    growth = 0  # how much longer than `text` the result is so far

    def value_of(match: re.Match[str]) -> str:
        nonlocal complete
        if match.group(0) == "\\$":
            return "$"
        name = match.group("braced") or match.group("bare")
        op = match.group("op")
        value = env.get(name)
        declared = name in env
        if op in (":-", "-"):
            # An ARG declared without a value is unset unless --build-arg gives one, so the
            # build uses the default word: judge that (`ARG REF` + `${REF:-main}` is `main`).
            empty = value is None or (op == ":-" and value == "")
            if empty:
                return _substitute(match.group("word") or "", env, max_bytes)[0]
            return value or ""
        if op in (":+", "+"):
            if declared and value is None:
                complete = False
                return match.group(0)
            word = match.group("word") or ""
            return _substitute(word, env, max_bytes)[0] if value else ""
        if value is None:
            complete = False
            return match.group(0)
        return value

    def replace(match: re.Match[str]) -> str:
        # The result up to this value is a prefix of the final one: past the limit, stop.
        nonlocal growth
        value = value_of(match)
        if match.start() + growth + len(value) > max_bytes:
            raise _TooLong
        growth += len(value) - len(match.group(0))
        return value

    if "$" not in text:
        return text, True
    result = _VARIABLE.sub(replace, text)
    if len(result) > max_bytes:  # the literal text after the last value
        raise _TooLong
    return result, complete


def expand_word(
    text: str, env: Env, max_bytes: int = DEFAULT_LIMITS.expansion_max_bytes
) -> tuple[str, bool]:
    """An ENV/ARG value, WORKDIR or COPY/ADD argument as BuildKit's `ProcessWord` reads it: quotes
    and escapes processed, variables expanded outside single quotes (`"$APP_DIR"` -> `app`,
    `cuda>=11.8\\ brand=tesla` -> `cuda>=11.8 brand=tesla`). A value BuildKit's lexer refuses
    (an unclosed quote fails the build) is kept as written and unknown."""
    try:
        return _process(text, env, max_bytes)
    except _TooLong:
        return text, False


def _process(text: str, env: Env, max_bytes: int) -> tuple[str, bool]:
    """expand_word's work; _TooLong past `max_bytes`."""
    if not any(c in text for c in "$'\"\\"):
        return text, True
    complete = True

    def substitute(reference: str) -> str:
        nonlocal complete
        value, known = _substitute(reference, env, max_bytes)
        complete &= known
        return value

    try:
        value = process_word(text, substitute)
    except LexError:
        return text, False
    if len(value) > max_bytes:
        raise _TooLong
    return value, complete


def runner_platform() -> str:
    """The platform of this machine as Docker writes it ("linux/amd64")."""
    machine = _platform.machine().lower()
    return f"linux/{_MACHINES.get(machine, machine)}"


def platform_args(target: str | None = None) -> dict[str, str]:
    """BuildKit's automatic ARGs for building `target` (default: this machine) on this machine."""
    build = runner_platform()
    values: dict[str, str] = {}
    for prefix, text in (("TARGET", target or build), ("BUILD", build)):
        os_name, _, rest = text.partition("/")
        arch, _, variant = rest.partition("/")
        values[f"{prefix}PLATFORM"] = text
        values[f"{prefix}OS"] = os_name
        values[f"{prefix}ARCH"] = arch
        values[f"{prefix}VARIANT"] = variant
    return values


@dataclass(frozen=True)
class State:
    """What is in effect when an instruction runs."""

    env: Values  # ARG and ENV values visible to it
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
    root: int  # index of the first stage of its FROM chain (itself when FROM is an image)
    instructions: tuple[Instruction, ...]
    states: tuple[State, ...]  # parallel to `instructions`
    final_state: State
    image_env: Values  # the ENV values it leaves in its image: what a stage FROM it starts with


@dataclass(frozen=True)
class TooLong:
    """An ARG or ENV whose value would pass `expansion-max-bytes`, or the first one to pass
    `expansion-max-total-bytes` (`total`); its value is left unknown."""

    instruction: Instruction
    name: str
    limit: int
    total: bool = False

    @property
    def message(self) -> str:
        what = f"{self.instruction.keyword} {self.name}"
        if self.total:
            return (
                f"{what}: $VAR expansion would add more than {self.limit} bytes to the ARG "
                f"and ENV values of this file; this value and every later one that grows "
                f"by expansion are left unknown (limit {Limits.key('expansion_max_total_bytes')})"
            )
        return (
            f"{what}: the expanded value would be longer than {self.limit} bytes; it is left "
            f"unknown (limit {Limits.key('expansion_max_bytes')})"
        )


@dataclass(frozen=True)
class Build:
    """All stages, the global ARGs, and which stages the target needs."""

    stages: tuple[Stage, ...]
    global_args: Env
    target: int
    final_chain: tuple[int, ...]  # the target and the stages it is built FROM (target first)
    reachable: frozenset[int]  # every stage the build runs (FROM parents and COPY --from)
    too_long: tuple[TooLong, ...] = ()
    # Targets of the file not built past `targets-max-instructions` (their last stages).
    targets_left: tuple[int, ...] = ()
    # The ARGs given a value by --build-arg: a shell branch they decide is not the default's.
    given_args: frozenset[str] = frozenset()

    def root_base(self, stage: Stage) -> Stage:
        """The first stage of `stage`'s FROM chain, whose base is an external image."""
        return self.stages[stage.root]


class TargetNotFound(ValueError):
    """`--target` names no stage."""


class TooManyStages(ValueError):
    """The file has more stages than `dockerfile-max-stages`; `first_past` is the FROM past it."""

    def __init__(self, count: int, limit: int, first_past: Instruction) -> None:
        super().__init__(
            f"the Dockerfile has {count} stages (FROM lines), more than {limit}; it is not "
            f"checked (limit {Limits.key('dockerfile_max_stages')})"
        )
        self.first_past = first_past


class _Values:
    """ARG/ENV values within `expansion-max-bytes` each and `expansion-max-total-bytes` of
    growth together, remembering which ones passed them."""

    def __init__(self, limits: Limits) -> None:
        self.max_bytes = limits.expansion_max_bytes
        self.max_growth = limits.expansion_max_total_bytes
        self.growth = 0  # bytes expansion added to the values so far
        self.too_long: list[TooLong] = []

    def expand(
        self, text: str, env: Env, instruction: Instruction, name: str
    ) -> tuple[str | None, bool]:
        """(value, complete); a value past a limit is None (unknown) and remembered."""
        try:
            value, complete = _process(text, env, self.max_bytes)
        except _TooLong:
            self.too_long.append(TooLong(instruction, name, self.max_bytes))
            return None, False
        # What the file spells out costs nothing more; what expansion adds is counted: each
        # of 20,000 ARGs one byte longer than the one before would hold 200 MB.
        growth = len(value) - len(text)
        if growth <= 0:
            return value, complete
        if self.growth + growth > self.max_growth:
            if self.growth <= self.max_growth:  # the first past it is reported, once
                self.too_long.append(TooLong(instruction, name, self.max_growth, total=True))
                self.growth = self.max_growth + 1
            return None, False
        self.growth += growth
        return value, complete


def build_stages(
    parsed: ParsedDockerfile,
    build_args: Mapping[str, str],
    target: str | None,
    platform: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Build:
    """Group instructions into stages and resolve ARG/ENV/WORKDIR/USER for each.

    The Build is for `target`, or for the last stage when `target` is None.
    """
    return build_targets(parsed, build_args, target, platform, limits)[0]


def build_targets(
    parsed: ParsedDockerfile,
    build_args: Mapping[str, str],
    target: str | None,
    platform: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[Build, ...]:
    """One Build per target: `target` alone when given, else every stage that no other stage
    builds on or copies from (the last stage first), so a file with several targets is linted
    whole, not only for its last stage.

    Linear in the size of the file, except that each target walks the stages it builds:
    targets past `targets-max-instructions` are left out (`Build.targets_left`), and a file
    past `dockerfile-max-stages` is refused (TooManyStages).
    """
    _check_stage_count(parsed, limits.dockerfile_max_stages)
    # Automatic platform ARGs first: a --build-arg or global ARG of the same name wins.
    automatic = platform_args(platform)
    values = _Values(limits)
    global_args: dict[str, str | None] = {
        name: build_args.get(name, value) for name, value in automatic.items()
    }
    stages: list[Stage] = []
    pending: list[Instruction] = []
    current_from: Instruction | None = None
    names: dict[str, int] = {}  # the last stage of each name, so each FROM finds it at once
    for instruction in parsed.instructions:
        if instruction.keyword == "FROM":
            if current_from is not None:
                stages.append(
                    _stage(
                        len(stages),
                        current_from,
                        pending,
                        stages,
                        names,
                        global_args,
                        build_args,
                        values,
                    )
                )
                if stages[-1].name:
                    names[stages[-1].name.lower()] = stages[-1].index
            current_from, pending = instruction, []
        elif current_from is None:
            if instruction.keyword == "ARG":
                for name, default in _arg_pairs(instruction):
                    value = build_args.get(name)
                    if value is None and default is not None:
                        value = values.expand(default, global_args, instruction, name)[0]
                    if value is not None or name not in global_args:
                        global_args[name] = value
        else:
            pending.append(instruction)
    if current_from is not None:
        stages.append(
            _stage(
                len(stages), current_from, pending, stages, names, global_args, build_args, values
            )
        )
    frozen = tuple(stages)
    too_long = tuple(values.too_long)
    if not frozen:
        return (Build((), global_args, -1, (), frozenset(), too_long),)
    by_name = {s.name.lower(): s.index for s in frozen if s.name}
    dependencies = tuple(_dependencies(stage, by_name) for stage in frozen)
    indexes = _target_indexes(frozen, target, dependencies)
    builds: list[Build] = []
    spent = 0  # instructions of the stages each target builds, summed over the targets
    for count, index in enumerate(indexes):
        build = _graph(frozen, global_args, index, dependencies, too_long, frozenset(build_args))
        spent += sum(len(frozen[i].instructions) + 1 for i in build.reachable)
        if count and spent > limits.targets_max_instructions:
            left = tuple(indexes[count:])
            return tuple(dataclasses.replace(b, targets_left=left) for b in builds)
        builds.append(build)
    return tuple(builds)


def _check_stage_count(parsed: ParsedDockerfile, limit: int) -> None:
    froms = [i for i in parsed.instructions if i.keyword == "FROM"]
    if len(froms) > limit:
        raise TooManyStages(len(froms), limit, froms[limit])


def _arg_pairs(instruction: Instruction) -> list[tuple[str, str | None]]:
    pairs = []
    for arg in instruction.args:
        name, sep, default = arg.partition("=")
        pairs.append((name, default if sep else None))
    return pairs


def env_pairs(instruction: Instruction) -> list[tuple[str, str]]:
    """`ENV a=b c=d` and legacy `ENV a b` as (name, value as written) pairs: its quotes,
    escapes and variables are for expand_word, with the values from before the instruction."""
    args = instruction.args
    return [(args[i], args[i + 1]) for i in range(0, len(args) - 1, 2)]


def _stage(
    index: int,
    from_instruction: Instruction,
    instructions: list[Instruction],
    previous: list[Stage],
    names: Mapping[str, int],
    global_args: Mapping[str, str | None],
    build_args: Mapping[str, str],
    values: _Values,
) -> Stage:
    args = from_instruction.args
    image_text = args[0] if args else ""
    name = args[2] if len(args) >= 3 and args[1].upper() == "AS" else None
    base, known = expand(image_text, global_args)
    parent = names.get(base.lower())
    inherited = previous[parent] if parent is not None else None
    # A stage FROM another starts with the ENV values of that one's image (its ARGs end
    # with it), its WORKDIR and USER.
    start = inherited.image_env if inherited else _NO_VALUES
    env = start
    workdir, user = (
        (inherited.final_state.workdir, inherited.final_state.user) if inherited else ("/", None)
    )
    arg_names: list[str] = []
    env_names: set[str] = set()
    states: list[State] = []
    for instruction in instructions:
        states.append(State(env, workdir, user))
        keyword = instruction.keyword
        if keyword == "ARG":
            for arg_name, default in _arg_pairs(instruction):
                arg_names.append(arg_name)
                if arg_name in build_args:
                    value: str | None = build_args[arg_name]
                elif default is not None:
                    value = values.expand(default, env, instruction, arg_name)[0]
                else:
                    value = global_args.get(arg_name)
                env = env.set(arg_name, value)
        elif keyword == "ENV":
            # Every value of one ENV is expanded with the values from before it (Docker's
            # `ENV abc=bye def=$abc` sets def to abc's earlier value); each ARG default sees
            # the ARGs before it on its line (BuildKit's dispatchArg adds them one by one).
            before = env
            for env_name, raw in env_pairs(instruction):
                text, complete = values.expand(raw, before, instruction, env_name)
                env = env.set(env_name, text if complete else None)
                env_names.add(env_name)
        elif keyword == "WORKDIR" and instruction.args:
            path = expand_word(instruction.args[0], env)[0]
            joined = posixpath.normpath(posixpath.join(workdir, path))
            # Linux refuses a longer path (ENAMETOOLONG: the build fails there); thousands of
            # relative WORKDIRs would otherwise hold a longer path in every state after them.
            workdir = joined if len(joined) < _PATH_MAX else workdir
        elif keyword == "USER" and instruction.args:
            user = expand(instruction.args[0], env)[0]
    image_env = env
    for arg_name in arg_names:  # an ARG ends with its stage unless ENV (here or before) set it
        if arg_name not in env_names and arg_name not in start and arg_name in image_env:
            image_env = image_env.delete(arg_name)
    return Stage(
        index=index,
        name=name,
        from_instruction=from_instruction,
        base=base,
        base_known=known,
        parent=parent,
        root=inherited.root if inherited else index,
        instructions=tuple(instructions),
        states=tuple(states),
        final_state=State(env, workdir, user),
        image_env=image_env,
    )


def _dependencies(stage: Stage, names: Mapping[str, int]) -> frozenset[int]:
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
    return frozenset(found)


def _target_indexes(
    stages: tuple[Stage, ...], target: str | None, dependencies: tuple[frozenset[int], ...]
) -> list[int]:
    if target is not None:
        match = [s.index for s in stages if s.name and s.name.lower() == target.lower()]
        if not match:
            names = ", ".join(s.name for s in stages if s.name) or "none"
            raise TargetNotFound(f"target stage '{target}' not found (stages: {names})")
        return match[:1]
    used: set[int] = set().union(*dependencies)
    # `FROM base-${TARGETARCH}` or `--from=${FLAVOR}-build` may pick a stage for another
    # platform or build arg: such a stage is a base of that one, not a target of its own.
    # Each distinct pattern is tried once per name, with the stages that wrote it.
    # A reference whose value is an image (`FROM ${BASE_IMAGE}`, default nvidia/cuda:...) picks
    # an image, not a stage: as the pattern `*` it made every stage a base, and only the last
    # target was linted.
    owners: dict[str, set[int]] = {}
    for stage in stages:
        for ref, value in _references(stage):
            if "$" in value or not value or _STAGE_NAME.fullmatch(value.lower()):
                owners.setdefault(_reference_pattern(ref), set()).add(stage.index)
    for stage in stages:
        if stage.name and any(
            owner != {stage.index} and fnmatch.fnmatchcase(stage.name.lower(), pattern)
            for pattern, owner in owners.items()
        ):
            used.add(stage.index)
    last = len(stages) - 1
    return [last] + [s.index for s in stages[:last] if s.index not in used]


def _references(stage: Stage) -> list[tuple[str, str]]:
    """Stage references that use a variable, as written and with the build's values: the FROM
    image and every `--from=` / `mount from=`."""
    refs = [(stage.from_instruction.args[0], stage.base)] if stage.from_instruction.args else []
    for instruction, state in zip(stage.instructions, stage.states, strict=True):
        found = []
        if instruction.keyword in ("COPY", "ADD"):
            found.extend(instruction.flag_values("from"))
        for mount in instruction.flag_values("mount"):
            found.extend(o[5:] for o in mount.split(",") if o.startswith("from="))
        refs.extend((ref, expand(ref, state.env)[0]) for ref in found)
    return [(ref, value) for ref, value in refs if "$" in ref]


def _reference_pattern(text: str) -> str:
    """`base-${TARGETARCH}` -> `base-*` (every variable may take any value)."""
    escaped = re.sub(r"([\[\]?*])", r"[\1]", text.lower())
    return _VARIABLE.sub("*", escaped)


def _graph(
    stages: tuple[Stage, ...],
    global_args: Env,
    target_index: int,
    dependencies: tuple[frozenset[int], ...],
    too_long: tuple[TooLong, ...],
    given_args: frozenset[str],
) -> Build:
    chain = [target_index]
    parent = stages[target_index].parent
    while parent is not None:  # a parent always comes earlier in the file: no cycle
        chain.append(parent)
        parent = stages[parent].parent
    reachable = {target_index}
    todo = [target_index]
    while todo:
        for dependency in dependencies[todo.pop()]:
            if dependency not in reachable:
                reachable.add(dependency)
                todo.append(dependency)
    return Build(
        stages,
        global_args,
        target_index,
        tuple(chain),
        frozenset(reachable),
        too_long,
        given_args=given_args,
    )
