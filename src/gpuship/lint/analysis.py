"""Everything the rules look at for one Dockerfile, computed once and shared.

`Analysis` ties the parsed file, its stages, the build context and the shell of every `RUN`
together, and answers the questions several rules ask: which commands a RUN executes
(including scripts it runs from the context), which cache mounts it has, and which context
file a path inside the image came from.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TypeVar, cast

from gpuship.dockerfile.source import Instruction, ParsedDockerfile, SourceMap, Text
from gpuship.lint.branches import Decision, decide, describe
from gpuship.lint.context import CACHED_TEXT_MAX_CHARS, BuildContext
from gpuship.lint.copies import CopyIndex
from gpuship.lint.packages import (
    PythonInstall,
    Spec,
    parse_conda_env,
    parse_pyproject,
    parse_requirements,
    python_install,
)
from gpuship.lint.settings import LintSettings
from gpuship.lint.shell import (
    SHELLS,
    Command,
    Script,
    ShellParser,
    Word,
    expand_shell,
    inline_script,
    normalise,
)
from gpuship.lint.stages import Build, Env, Stage, State, Values, expand

_T = TypeVar("_T")
_PYTHON = re.compile(r"^python[0-9.]*$")
_HEREDOC_TOKEN = re.compile(r"<<-?\s*([\"']?)[A-Za-z_][A-Za-z0-9_]*\1")


@dataclass(frozen=True)
class Mount:
    """One `RUN --mount=...`."""

    type: str
    target: str
    options: dict[str, str]


@dataclass(frozen=True)
class FileSpec:
    """A requirement read from a file a RUN installs from (requirements, env file, pyproject)."""

    spec: Spec
    source: str  # the file's path in the build context
    line: int
    column: int
    tool: str | None  # "pip"/"conda" for conda env files, else None (the installing tool)
    index_urls: tuple[str, ...]  # index URLs the file itself sets (`--extra-index-url` lines)
    primary_index_urls: tuple[str, ...] = ()  # those of them set by `--index-url`


@dataclass(frozen=True)
class Requested:
    """A package an install names: on its command line, or in a file it installs from."""

    spec: Spec
    install: PythonInstall  # what resolves it (pip for a conda environment file's `pip:`)
    file: FileSpec | None  # None: on the command line (`spec.word`)
    file_path: Path | None


@dataclass(frozen=True)
class Run:
    """One RUN instruction with its shell and the scripts it runs."""

    instruction: Instruction
    stage: Stage
    state: State
    scripts: tuple[Script, ...]  # the RUN's own shell first, then followed scripts
    python: tuple[Text, ...]  # Python heredocs (`RUN python3 <<EOF`)
    mounts: tuple[Mount, ...]
    # What a finding on a command says about the shell branch it runs in, by command id:
    # one that gpuship cannot decide, or one a --build-arg value selects.
    notes: Mapping[int, str] = field(default_factory=dict)
    # Files a `. file` / `source file` command reads into the RUN's shell, by command id.
    sourced: Mapping[int, Script] = field(default_factory=dict)
    # Several rules ask the same questions of each command; answers are computed once.
    _installs: dict[int, PythonInstall | None] = field(
        default_factory=dict, compare=False, repr=False
    )
    _exported: dict[int, Values] = field(default_factory=dict, compare=False, repr=False)
    _per_run: dict[Callable[[Run], object], object] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def commands(self) -> Iterator[Command]:
        for script in self.scripts:
            yield from script.commands

    def note(self, command: Command) -> str:
        """What a finding on `command` adds about the shell branch it runs in ("" for none)."""
        return self.notes.get(id(command), "")

    def env_at(self, command: Command) -> Values:
        """Stage env plus the command's own `FOO=1` prefix and earlier `export`s.

        Persistent maps: commands between two assignments share one, and an assignment
        adds a value without copying the rest, so neither a RUN of a hundred thousand
        commands nor a stage of thousands of ARGs costs a dict per command.
        """
        after = self._exported_after  # fills self._exported
        env = self._exported.get(id(command), after)
        if not command.assignments:
            return env
        return _assigned(env, [a.text for a in command.assignments])

    def python_install(self, command: Command) -> PythonInstall | None:
        """What `command` installs with pip/uv/conda/poetry, if anything."""
        key = id(command)
        if key not in self._installs:
            self._installs[key] = python_install(command, self.env_at(command))
        return self._installs[key]

    def per_run(self, compute: Callable[[Run], _T]) -> _T:
        """`compute(self)`, computed once for this RUN: for an index several questions about
        its commands read (what a RUN of thousands of commands deletes or cleans after each)."""
        if compute not in self._per_run:
            self._per_run[compute] = compute(self)
        return cast(_T, self._per_run[compute])

    @cached_property
    def _exported_after(self) -> Values:
        """The stage env plus every assignment of this RUN; on the way, what each command sees.

        One pass for all commands (a RUN can chain thousands).
        """
        env = self.state.env
        for other in self.commands:
            self._exported[id(other)] = env
            env = _advanced(env, other, self.sourced)
        return env

    def has_mount_on(self, *fragments: str, kinds: tuple[str, ...] = ("cache", "tmpfs")) -> bool:
        """True when a cache/tmpfs mount's target contains one of `fragments`."""
        return any(m.type in kinds and any(f in m.target for f in fragments) for m in self.mounts)


class _CommandBudget:
    """`run-max-commands` for one RUN: counts commands as scripts are parsed and followed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen = 0

    @property
    def exceeded(self) -> bool:
        return self.seen > self.limit

    def count(self, script: Script) -> None:
        self.seen += len(script.commands)

    def cap(self, scripts: list[Script]) -> list[Script]:
        """The scripts cut to the first `limit` commands."""
        kept: list[Script] = []
        room = self.limit
        for script in scripts:
            if room <= 0:
                break
            commands = script.commands[:room]
            kept.append(Script(script.source, script.file, commands))
            room -= len(commands)
        return kept


class _FileCache:
    """The context files `Analysis._file_entries` parsed, shared by every target's Analysis,
    the characters of text they came from, and where each file a RUN reads was copied from."""

    def __init__(self) -> None:
        self.entries: dict[
            tuple[str, bool, tuple[str, ...]], tuple[tuple[FileSpec, ...], tuple[str, ...]]
        ] = {}
        self.chars = 0
        # `Analysis.context_source`'s answers: each rule asks where a RUN's files came from.
        self.sources: dict[tuple[int, int, str], str | None] = {}


class Analysis:
    """The shared view of one Dockerfile that every rule reads."""

    def __init__(
        self,
        display: str,
        parsed: ParsedDockerfile,
        build: Build,
        context: BuildContext,
        config: LintSettings,
    ) -> None:
        self.display = display
        self.parsed = parsed
        self.build = build
        self.context = context
        self.config = config
        self._shell = ShellParser()
        # RUN instructions whose commands passed `run-max-commands` (the rest is unchecked).
        self.capped_runs: list[Instruction] = []
        # True for the first target linted: a check about the file as a whole (its ARG
        # lines, its build context), not about one target's build, runs then and only then,
        # so a file of many targets is not read again for each.
        self.first_target = True
        # What `per_file` computed, shared by the Analysis of every target; `per_target`'s own.
        self._per_file: dict[Callable[[Analysis], object], object] = {}
        self._per_target: dict[Callable[[Analysis], object], object] = {}
        self._files = _FileCache()

    def for_target(self, build: Build) -> Analysis:
        """The same file seen for another target: the stages, their RUNs and parsed shell are
        the same, only which stages make the image differs."""
        if build is self.build:
            return self
        other = Analysis(self.display, self.parsed, build, self.context, self.config)
        other._shell = self._shell
        other.first_target = False
        other._per_file = self._per_file
        other._files = self._files
        # cached_property values: computed once per file, whatever the number of targets.
        other.__dict__["runs"] = self.runs
        other.__dict__["_runs_by_stage"] = self._runs_by_stage
        other.__dict__["_triggers_by_stage"] = self._triggers_by_stage
        other.__dict__["stage_names"] = self.stage_names
        other.__dict__["_copies"] = self._copies
        return other

    def per_file(self, compute: Callable[[Analysis], _T]) -> _T:
        """`compute(self)`, computed once for the file and the same for every target: for a
        fact about all the file's stages or RUNs, whatever the target (a check that read every
        RUN for each target of a file of a thousand targets read the file a thousand times)."""
        if compute not in self._per_file:
            self._per_file[compute] = compute(self)
        return cast(_T, self._per_file[compute])

    def per_target(self, compute: Callable[[Analysis], _T]) -> _T:
        """`compute(self)`, computed once for this target: for a fact several checks read
        (the weights downloads its RUNs make, which three checks look at)."""
        if compute not in self._per_target:
            self._per_target[compute] = compute(self)
        return cast(_T, self._per_target[compute])

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self.build.stages

    @cached_property
    def reachable_stages(self) -> tuple[Stage, ...]:
        """The stages the build of the target runs, in file order. A check of one target
        walks these, not every stage: a file of a thousand one-stage targets would be walked
        a thousand times."""
        return tuple(self.build.stages[i] for i in sorted(self.build.reachable))

    @cached_property
    def stage_names(self) -> frozenset[str]:
        """Every stage name, lowercased (`COPY --from=NAME` names a stage, not an image)."""
        return frozenset(s.name.lower() for s in self.build.stages if s.name)

    def final_stages(self) -> list[Stage]:
        """Stages whose filesystem is the produced image (the target and its FROM chain)."""
        return [self.build.stages[i] for i in self.build.final_chain]

    @cached_property
    def runs(self) -> tuple[Run, ...]:
        """Every RUN, in file order."""
        result = []
        for stage in self.build.stages:
            for instruction, state in zip(stage.instructions, stage.states, strict=True):
                if instruction.keyword == "RUN":
                    result.append(self._run(stage, instruction, state))
        return tuple(result)

    def runs_of(self, stage: Stage) -> list[Run]:
        return self._runs_by_stage.get(stage.index, [])

    def runs_in(self, indexes: Iterable[int]) -> Iterator[Run]:
        """The RUNs of the stages at `indexes`, in file order: as many steps as those RUNs
        (a target of a file of a thousand stages reads only its own)."""
        for index in sorted(indexes):
            yield from self._runs_by_stage.get(index, ())

    def triggers_in(self, indexes: Iterable[int]) -> Iterator[Run]:
        """The `ONBUILD RUN` triggers of the stages at `indexes`, in file order.

        A trigger runs in every image built FROM its stage's image (a base for per-model
        images is where they live), after that image's own instructions: it sees the ENV the
        stage leaves in its image (not its ARGs), its last WORKDIR and USER; the scripts it
        runs are followed where the stage's COPYs before the ONBUILD line put them. Checks
        about what a command does (pinning, caches, downloads,
        toolchains, security) read them as RUNs of such an image; checks about this file's
        layer order do not."""
        for index in sorted(indexes):
            yield from self._triggers_by_stage.get(index, ())

    @cached_property
    def _triggers_by_stage(self) -> dict[int, list[Run]]:
        grouped: dict[int, list[Run]] = {}
        for stage in self.build.stages:
            final = stage.final_state
            state = State(stage.image_env, final.workdir, final.user)
            for instruction in stage.instructions:
                if instruction.keyword == "ONBUILD" and instruction.sub_keyword == "RUN":
                    run = self._run(stage, instruction, state)
                    grouped.setdefault(stage.index, []).append(run)
        return grouped

    @cached_property
    def _runs_by_stage(self) -> dict[int, list[Run]]:
        grouped: dict[int, list[Run]] = {}
        for run in self.runs:
            grouped.setdefault(run.stage.index, []).append(run)
        return grouped

    def _run(self, stage: Stage, instruction: Instruction, state: State) -> Run:
        mounts = tuple(parse_mount(m) for m in instruction.flag_values("mount"))
        scripts: list[Script] = []
        python: list[Text] = []
        if instruction.json_form:
            scripts.append(self._json_script(instruction))
        else:
            body = instruction.text.sub(instruction.body_offset)
            if instruction.heredocs:
                header = _HEREDOC_TOKEN.sub(lambda m: " " * len(m.group(0)), body.value)
                header_script = self._shell.parse(Text(header, body.source))
                interpreter = header_script.commands[0].name if header_script.commands else ""
                if header_script.commands and interpreter not in SHELLS:
                    scripts.append(header_script)
                for heredoc in instruction.heredocs:
                    if _PYTHON.match(interpreter):
                        python.append(heredoc.body)
                    elif not interpreter or interpreter in SHELLS:
                        scripts.append(self._shell.parse(heredoc.body))
            else:
                scripts.append(self._shell.parse(body))
        budget = _CommandBudget(self.context.limits.run_max_commands)
        for script in scripts:
            budget.count(script)
        sourced: dict[int, Script] = {}
        for script in list(scripts):
            scripts.extend(self._followed(stage, instruction, state, script, 0, budget, sourced))
        if budget.exceeded:
            self.capped_runs.append(instruction)
            scripts = budget.cap(scripts)
        scripts, notes = self._taken(state, scripts, sourced)
        for script in scripts:
            python.extend(self._inline_python(script))
        return Run(instruction, stage, state, tuple(scripts), tuple(python), mounts, notes, sourced)

    def _taken(
        self, state: State, scripts: list[Script], sourced: Mapping[int, Script]
    ) -> tuple[list[Script], dict[int, str]]:
        """The scripts without the commands of shell branches this build does not take, and
        the note each command in a branch gets: one that gpuship cannot decide keeps every
        arm it may take (and says so), one a --build-arg decides says which."""
        if not any(c.guards for script in scripts for c in script.commands):
            return scripts, {}
        decisions: dict[int, Decision] = {}
        notes: dict[int, str] = {}
        env = state.env  # as each command sees it, from the commands kept before it
        kept_scripts = []
        for script in scripts:
            kept = []
            for command in script.commands:
                for guard in command.guards:
                    if id(guard.branches) not in decisions:
                        decisions[id(guard.branches)] = decide(guard.branches, env)
                if all(decisions[id(g.branches)].runs(g) for g in command.guards):
                    kept.append(command)
                    note = self._branch_note(command, decisions, env)
                    if note:
                        notes[id(command)] = note
                    env = _advanced(env, command, sourced)
            kept_scripts.append(Script(script.source, script.file, tuple(kept)))
        return kept_scripts, notes

    def _branch_note(self, command: Command, decisions: dict[int, Decision], env: Env) -> str:
        undecided = [g for g in command.guards if not decisions[id(g.branches)].decided]
        if undecided:
            return (
                f" (in the shell branch {describe(undecided[-1])}, which gpuship cannot "
                "decide from the Dockerfile, so it is checked as if it runs)"
            )
        given = [
            (guard, name)
            for guard in command.guards
            for name in sorted(decisions[id(guard.branches)].variables)
            if name in self.build.given_args
        ]
        if not given:
            return ""
        guard = given[-1][0]
        values = ", ".join(f"--build-arg {name}={env.get(name)}" for _, name in given)
        return f" (in the shell branch {describe(guard)}, taken with {values})"

    def _json_script(self, instruction: Instruction) -> Script:
        text = instruction.text
        words = []
        offset = instruction.body_offset
        for arg in instruction.args:
            found = text.value.find(arg, offset)
            start = found if found >= 0 else offset
            words.append(Word(arg, start, start + len(arg)))
            offset = start + len(arg)
        command = normalise(Command(tuple(words), (), (), -instruction.index - 1, 0, text, None))
        commands = [command]
        inner = inline_script(command)  # RUN ["/bin/sh", "-c", "..."]
        if inner is not None:
            commands.extend(self._shell.parse(text.sub(*inner)).commands)
        return Script(text, None, tuple(commands))

    def _inline_python(self, script: Script) -> Iterator[Text]:
        for command in script.commands:
            if _PYTHON.match(command.name):
                words = command.words
                for index, word in enumerate(words[1:-1], start=1):
                    if word.text == "-c":
                        target = words[index + 1]
                        yield command.source.sub(target.start, target.end)

    def _followed(
        self,
        stage: Stage,
        instruction: Instruction,
        state: State,
        script: Script,
        depth: int,
        budget: _CommandBudget,
        sourced: dict[int, Script],
    ) -> list[Script]:
        """Scripts from the build context that this script runs (`./x.sh`, `bash x.sh`), each
        in the shell branches of the command that runs it; those read with `.`/`source` are
        recorded in `sourced` (their variables are the RUN's)."""
        if depth >= 3:
            return []
        found: list[Script] = []
        for command in script.commands:
            if budget.exceeded:
                break
            path = _script_path(command)
            if path is None:
                continue
            container = posixpath.normpath(posixpath.join(state.workdir, path))
            source = self.context_source(stage, instruction, container)
            if source is None:
                continue
            text = self.context.read_text(source, "script_max_bytes")
            if text is None:
                continue
            file = self.context.root / source
            nested = self._shell.parse(file_text(text), file, guards=command.guards)
            budget.count(nested)
            found.append(nested)
            if command.words and command.words[0].text in (".", "source"):
                sourced[id(command)] = nested
            found.extend(
                self._followed(stage, instruction, state, nested, depth + 1, budget, sourced)
            )
        return found

    def requested(self, run: Run, command: Command) -> Iterator[Requested]:
        """Every package `command` installs with pip/uv/conda/poetry: its arguments, then the
        lines of the requirement and conda environment files it installs from."""
        install = run.python_install(command)
        if install is None:
            return
        for spec in install.specs:
            if spec.word is not None:
                yield Requested(spec, install, None, None)
        env = run.env_at(command)
        # conda hands an environment file's `pip:` section, with its index lines, to pip.
        pip = dataclasses.replace(install, tool="pip", index_urls=(), extra_index_urls=())
        files = [(p, False) for p in install.requirement_files]
        files += [(p, True) for p in install.env_files]
        for path, conda in files:
            for item in self.file_specs(run, path.text, env, conda=conda):
                installer = pip if item.tool == "pip" else install
                yield Requested(item.spec, installer, item, self.context.root / item.source)

    def file_specs(
        self,
        run: Run,
        path: str,
        env: Env,
        *,
        conda: bool = False,
        visited: set[str] | None = None,
        extras: tuple[str, ...] = (),
    ) -> Iterator[FileSpec]:
        """Each requirement of a file `run` installs from (`-r path`, `-f env.yml`,
        `pip install ./dir` -> dir/pyproject.toml, with the optional dependencies of `extras`),
        found through the COPY that brought it, with the files it includes (`-r` inside it)."""
        visited = set() if visited is None else visited
        container = container_path(run.state.workdir, path, env)
        source = self.context_source(run.stage, run.instruction, container)
        if source is None or source in visited:
            return
        visited.add(source)
        text = self.context.read_text(source)
        if text is None:
            return
        specs, includes = self._file_entries(source, text, conda, extras)
        yield from specs
        for include in includes:
            nested = posixpath.join(posixpath.dirname(container), include)
            yield from self.file_specs(run, nested, env, visited=visited)

    def _file_entries(
        self, source: str, text: str, conda: bool, extras: tuple[str, ...]
    ) -> tuple[tuple[FileSpec, ...], tuple[str, ...]]:
        """The requirements of a context file and the files it includes, parsed once per file
        (four rules read each file a RUN installs from), within `CACHED_TEXT_MAX_CHARS`."""
        cache = self._files
        key = (source, conda, extras)
        if key in cache.entries:
            return cache.entries[key]
        entries = _parse_file(source, text, conda, extras)
        if cache.chars + len(text) <= CACHED_TEXT_MAX_CHARS:
            cache.chars += len(text)
            cache.entries[key] = entries
        return entries

    def context_source(self, stage: Stage, before: Instruction, container: str) -> str | None:
        """The context path that a COPY/ADD put at `container` before `before`."""
        key = (stage.index, before.index, container)
        sources = self._files.sources
        if key not in sources:
            sources[key] = self._copies.source(stage, before, container)
        return sources[key]

    @cached_property
    def _copies(self) -> CopyIndex:
        return CopyIndex(self.build.stages, self.context)


def _parse_file(
    source: str, text: str, conda: bool, extras: tuple[str, ...]
) -> tuple[tuple[FileSpec, ...], tuple[str, ...]]:
    """The requirements of a conda environment file, a pyproject.toml (with the optional
    dependencies of `extras`) or a requirements file, and the files it includes (`-r`)."""
    if conda or source.endswith((".yml", ".yaml")):
        return tuple(
            FileSpec(
                item.spec,
                source,
                item.line,
                item.column,
                "pip" if item.pip else "conda",
                item.index_urls,
                item.primary_index_urls,
            )
            for item in parse_conda_env(text)
        ), ()
    if source.endswith("pyproject.toml"):
        return tuple(
            FileSpec(requirement.spec, source, requirement.line, requirement.column, None, ())
            for requirement in parse_pyproject(text, extras)
        ), ()
    parsed = parse_requirements(text)
    return tuple(
        FileSpec(
            requirement.spec,
            source,
            requirement.line,
            requirement.column,
            None,
            parsed.index_urls,
            parsed.primary_index_urls,
        )
        for requirement in parsed.requirements
    ), parsed.includes


def container_path(workdir: str, path: str, env: Env) -> str:
    """An absolute container path for `path` as a RUN in `workdir` sees it."""
    value = expand(path, env)[0].replace("$HOME", "/root")
    if value.startswith("~"):
        value = "/root" + value[1:]
    return posixpath.normpath(posixpath.join(workdir, value))


def _advanced(env: Values, command: Command, sourced: Mapping[int, Script]) -> Values:
    """`env` after `command`: `export X=...` and a bare `X=...;` set a variable for the
    commands that follow, and so does a file read with `. file`."""
    if command.name == "export":
        return _assigned(env, [w.text for w in command.words[1:]])
    if not command.words:
        return _assigned(env, [a.text for a in command.assignments])
    script = sourced.get(id(command))
    if script is not None:
        for inner in script.commands:
            if inner.name == "export" or not inner.words:
                env = _advanced(env, inner, {})
    return env


def _assigned(env: Values, assignments: list[str]) -> Values:
    """`env` after shell assignments in order; a value that uses an unknown variable is
    unknown."""
    for assignment in assignments:
        name, sep, raw = assignment.partition("=")
        if sep:
            value, known = expand_shell(raw, env)
            env = env.set(name, value if known else None)
    return env


def file_text(text: str) -> Text:
    """A whole file's text, mapped line by line."""
    segments = []
    offset = 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        segments.append((offset, number, 1))
        offset += len(line)
    return Text(text, SourceMap(tuple(segments)))


def parse_mount(spec: str) -> Mount:
    """One `--mount=` value: `type=secret,id=hf,env=HF_TOKEN`."""
    options: dict[str, str] = {}
    for part in spec.split(","):
        key, _, value = part.partition("=")
        options[key.strip()] = value.strip()
    kind = options.get("type", "bind")
    target = options.get("target") or options.get("dst") or options.get("destination") or ""
    return Mount(kind, target, options)


def _script_path(command: Command) -> str | None:
    """The script file a command runs: `./x.sh`, `/opt/x.sh`, `bash x.sh`, `. x.sh`."""
    name = command.words[0].text if command.words else ""
    if command.name in SHELLS or name in (".", "source"):
        for word in command.words[1:]:
            if word.text.startswith("-"):
                if "c" in word.text[1:] and not word.text.startswith("--"):
                    return None
                continue
            return word.text if not word.text.startswith("$") else None
        return None
    if name.endswith(".sh") or name.startswith("./"):
        return name
    return None
