"""Layer order, waste and size: what makes rebuilds slow and images big."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from gpuship.dockerfile.source import Instruction
from gpuship.lint.analysis import Analysis, Run, container_path
from gpuship.lint.checks import leftovers
from gpuship.lint.checks.base import Hit, at_word, context_copies, first_in_chains, is_python
from gpuship.lint.checks.cache import CacheOff, left_caches, pip_cache_configured_off
from gpuship.lint.checks.cuda import compiles_at_install
from gpuship.lint.checks.pinning import project_manifests
from gpuship.lint.checks.weights import downloads, make_recipes
from gpuship.lint.context import BuildContext, context_relative
from gpuship.lint.packages import PythonInstall, os_install
from gpuship.lint.shell import SHELLS, Command, Word
from gpuship.lint.stages import Stage, State, expand_word
from gpuship.units import human_size


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL601/602 (layer order), GSL701-703 (waste), GSL801 (large context copies)."""
    yield from _order(analysis)
    yield from _waste(analysis)
    yield from leftovers.check(analysis)
    yield from _large_copies(analysis)


_CODE_SUFFIXES = (".py", ".ipynb", ".js", ".ts", ".go", ".rs", ".cpp", ".cu")
# Packaging metadata: a COPY of these is the dependency layer's input, not source.
_MANIFESTS = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "uv.lock",
    "poetry.lock",
    "pipfile",
    "pipfile.lock",
    "environment.yml",
    "environment.yaml",
    "package.json",
    "go.mod",
    "cargo.toml",
)
# Python files a project skeleton needs before its dependencies install (the version or package
# marker the build backend reads): copying them alone does not make the layer source.
_SKELETON_FILES = ("__init__.py", "setup.py", "version.py", "_version.py", "__about__.py")


def _whole_context_copy(instruction: Instruction) -> bool:
    if instruction.keyword not in ("COPY", "ADD") or instruction.flag("from") is not None:
        return False
    return any(a == "*" or context_relative(a) == "." for a in instruction.args[:-1])


def _is_manifest(source: str) -> bool:
    name = posixpath.basename(source.rstrip("/")).lower()
    return name in _MANIFESTS or (name.startswith("requirements") and name.endswith(".txt"))


def _code_copy(analysis: Analysis, instruction: Instruction, state: State, later: _Later) -> bool:
    """A COPY of source code (edited on every change): `*.py`, a directory of code, or a code
    file (`COPY handler.py /app/`).

    Not source: a file or directory that a later RUN of the stage runs or reads (`COPY
    download.py /opt/` then `RUN python /opt/download.py`, `COPY scripts /tmp/s/` then `RUN bash
    /tmp/s/install.sh`), which is that step's input; and a project skeleton, the Python files
    copied beside a manifest (`COPY pyproject.toml build_backend.py ./`) or a package's
    `__init__.py`, which the documented dependency-layer pattern needs. `later` gives what the
    stage's RUNs use."""
    if instruction.keyword not in ("COPY", "ADD") or instruction.flag("from") is not None:
        return False
    context = analysis.context
    sources = instruction.args[:-1]
    skeleton = any(_is_manifest(s) for s in sources)
    for source in sources:
        if "*" in source and source.lower().endswith(_CODE_SUFFIXES):
            return True
        directory = source.rstrip("/")
        if (
            context.exists
            and context.is_dir(directory)
            and any(f.path.endswith(_CODE_SUFFIXES) for f in context.files_under(directory))
            and later.use.runs_below.get(_destination(instruction, state), -1) <= instruction.index
        ):
            return True
        name = posixpath.basename(source)
        if (
            source.lower().endswith(_CODE_SUFFIXES)
            and not (skeleton or name in _SKELETON_FILES)
            and later.use.named.get(name, -1) <= instruction.index
        ):
            return True
    return False


def _destination(instruction: Instruction, state: State) -> str:
    """The container directory a COPY writes to or into (its last argument, from WORKDIR), as
    a prefix: `/opt/tools/`."""
    raw = expand_word(instruction.args[-1], state.env)[0]
    return posixpath.normpath(posixpath.join(state.workdir, raw)).rstrip("/") + "/"


@dataclass(frozen=True)
class _LaterUse:
    """What the RUNs of a stage use, each with the last RUN (instruction index) that does: so
    "does a RUN after this COPY use what it copied" costs one pass over the stage's RUNs, not
    one per COPY (a thousand COPYs of scripts that the stage's last RUNs run)."""

    named: dict[str, int]  # a code file name a COPY copies -> the last RUN whose text holds it
    runs_below: dict[str, int]  # a COPY's destination -> the last RUN running a program below it


# Where a code file name may end in a RUN's text (no suffix is a prefix of another).
_SUFFIX_AT = re.compile(
    "(?=(" + "|".join(re.escape(s) for s in _CODE_SUFFIXES) + "))", re.IGNORECASE
)


class _Later:
    """A stage's `_LaterUse`, read for the first COPY that asks."""

    def __init__(self, analysis: Analysis, stage: Stage) -> None:
        self._analysis = analysis
        self._stage = stage

    @cached_property
    def use(self) -> _LaterUse:
        return _later_use(self._analysis, self._stage)


def _later_use(analysis: Analysis, stage: Stage) -> _LaterUse:
    """The code file names and destinations of `stage`'s COPYs, each with the last RUN of the
    stage that names the file or runs a program from below the destination."""
    names: set[str] = set()
    destinations: set[str] = set()
    for instruction, state in zip(stage.instructions, stage.states, strict=True):
        if instruction.keyword in ("COPY", "ADD") and instruction.args:
            destinations.add(_destination(instruction, state))
            names.update(
                posixpath.basename(s)
                for s in instruction.args[:-1]
                if s.lower().endswith(_CODE_SUFFIXES)
            )
    lengths = {len(name) for name in names}
    depths = {d.count("/") for d in destinations}
    named: dict[str, int] = {}
    runs_below: dict[str, int] = {}
    for run in analysis.runs_of(stage):  # in file order: the last one stays
        # The RUN's text, and the recipes its `make TARGET`s run (`make models` runs a script).
        texts = [run.instruction.text.value]
        for command in run.commands if names else ():
            made = make_recipes(analysis, run, command)
            texts += [recipe.text for recipe, _ in made.recipes] if made is not None else []
        for text in texts:
            for match in _SUFFIX_AT.finditer(text):  # a name holding a suffix ends with it
                end = match.start() + len(match.group(1))
                for length in lengths:
                    if end >= length and text[end - length : end] in names:
                        named[text[end - length : end]] = run.instruction.index
        for command in run.commands:
            for word in _program_words(command):
                path = container_path(run.state.workdir, word.text, run.env_at(command))
                for directory in _directories_above(path, depths):
                    if directory in destinations:
                        runs_below[directory] = run.instruction.index
    return _LaterUse(named, runs_below)


def _program_words(command: Command) -> list[Word]:
    """The word naming the program or script a command runs (`bash /tmp/s/install.sh`)."""
    words = command.words
    if command.name in SHELLS or is_python(command):
        return [w for w in words[1:2] if not w.text.startswith("-")]
    return list(words[:1])


def _directories_above(path: str, depths: set[int]) -> Iterator[str]:
    """The directories above `path` ("/opt/", "/opt/tools/") with as many "/" as one of
    `depths`: a path a thousand directories deep is not cut a thousand times."""
    end = -1
    for depth in range(1, max(depths, default=0) + 1):
        end = path.find("/", end + 1)
        if end < 0:
            return
        if depth in depths:
            yield path[: end + 1]


def _order(analysis: Analysis) -> Iterator[Hit]:
    heavy_runs = {d.run.instruction.index: d for d in downloads(analysis)}
    for stage in analysis.reachable_stages:
        copy: Instruction | None = None
        heaviest: tuple[int, Hit] | None = None  # the heaviest install after the copy
        runs = {r.instruction.index: r for r in analysis.runs_of(stage)}
        whole = False
        later = _Later(analysis, stage)
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            if copy is None and (
                _whole_context_copy(instruction) or _code_copy(analysis, instruction, state, later)
            ):
                copy = instruction
                whole = _whole_context_copy(instruction)
            run = runs.get(instruction.index)
            if copy is None or run is None:
                continue
            found = _dependency_install(analysis, run, copy, whole)
            if found is not None and (heaviest is None or found[0] > heaviest[0]):
                heaviest = found
            download = heavy_runs.get(run.instruction.index)
            if download is not None:
                yield Hit(
                    "GSL602",
                    f"weights download after `COPY {copy.args[0]}` (line "
                    f"{copy.start_line}): every code edit downloads the model again",
                    download.hit.span,
                    run.instruction,
                    stage,
                    download.hit.file,
                )
            for command in run.commands:
                install = run.python_install(command)
                for spec in install.specs if install else ():
                    if spec.word and compiles_at_install(spec):
                        yield at_word(
                            "GSL602",
                            f"`{spec.text}` compiles kernels after `COPY "
                            f"{copy.args[0]}` (line {copy.start_line}): every code "
                            "edit recompiles it",
                            run,
                            command,
                            spec.word,
                        )
        if heaviest is not None:
            yield heaviest[1]


def _dependency_install(
    analysis: Analysis, run: Run, copy: Instruction, whole: bool
) -> tuple[int, Hit] | None:
    """The heaviest dependency install in `run` with its weight: Python dependencies (2) before
    OS packages (1), the first of equals; also one that a `make TARGET` recipe runs."""
    found: tuple[int, Hit] | None = None
    for command in run.commands:
        weight, what = _install_weight(analysis, run, command, copy, whole)
        made = make_recipes(analysis, run, command) if not weight else None
        if made is not None:
            for recipe, inner in made.recipes:
                inner_weight, inner_what = _install_weight(analysis, run, inner, copy, whole)
                if inner_weight > weight:
                    weight = inner_weight
                    where = f"{made.source} line {recipe.line}"
                    what = f"`make {recipe.target}` ({where}) runs a {inner_what}"
        if weight and (found is None or weight > found[0]):
            word = made.word if made is not None else command.words[0]
            message = (
                f"{what} after `COPY {copy.args[0]}` (line {copy.start_line}): every code "
                "edit re-runs this install"
            )
            found = (weight, at_word("GSL601", message, run, command, word))
    return found


def _install_weight(
    analysis: Analysis, run: Run, command: Command, copy: Instruction, whole: bool
) -> tuple[int, str]:
    """How heavy the install `command` performs is (0: none) and what it installs.

    After a code-only COPY, `uv sync` / `poetry install` install the project itself (the
    documented pattern), so only a whole-context COPY makes them a finding; and not even then
    when an earlier `uv sync --no-install-project` / `poetry install --no-root` installed the
    dependencies (uv's and poetry's documented layering: the second sync installs only the
    project). A local project (`pip install -e .`, `".[serve]"`) installs the dependencies its
    pyproject.toml lists, unless a RUN before the copy installed Python dependencies."""
    install = run.python_install(command)
    if install is not None:
        named = [s for s in install.specs if s.kind in ("name", "vcs") and s.word]
        project = (
            whole
            and install.project
            and install.verb in ("sync", "install")
            and not _project_only(install)
            and not _dependencies_layered(analysis, run, copy, install)
        )
        if install.requirement_files or install.env_files or named or project:
            return 2, "dependencies install"
        project_install = _project_dependencies(analysis, run, command, install, copy)
        if project_install is not None:
            return (
                2,
                f"project install `{project_install}` (the dependencies of its pyproject.toml)",
            )
    if os_install(command) is not None:
        return 1, "OS packages install"
    return 0, ""


def _project_dependencies(
    analysis: Analysis, run: Run, command: Command, install: PythonInstall, copy: Instruction
) -> str | None:
    """The local project (`.`, `.[serve]`) an install installs with the dependencies its
    pyproject.toml lists, when no RUN before the copy (this stage or one it is built FROM)
    installed Python dependencies; None otherwise."""
    first = analysis.per_file(_dependency_installs).get(run.stage.index)
    if first is not None and first < copy.index:
        return None
    env = run.env_at(command)
    for spec, path, extras in project_manifests(install):
        if next(iter(analysis.file_specs(run, path, env, extras=extras)), None) is not None:
            return spec.text
    return None


def _dependency_installs(analysis: Analysis) -> dict[int, int]:
    """For each stage, the first RUN there or up its FROM chain that installs Python
    dependencies (requirement or env files, named packages). Once per file."""
    runs = [
        run
        for run in analysis.runs
        if any(
            (install := run.python_install(c)) is not None
            and (
                install.requirement_files
                or install.env_files
                or any(s.kind in ("name", "vcs") for s in install.specs)
            )
            for c in run.commands
        )
    ]
    return first_in_chains(analysis.stages, runs)


# Options that leave the project out (`uv sync --no-install-project`) or install it alone.
_DEPENDENCIES_ONLY = frozenset({"--no-install-project", "--no-install-workspace", "--no-root"})
_PROJECT_ONLY = frozenset({"--only-root", "--only-install-project"})


def _project_only(install: PythonInstall) -> bool:
    return bool(_PROJECT_ONLY & install.options)


def _dependencies_layered(
    analysis: Analysis, run: Run, copy: Instruction, install: PythonInstall
) -> bool:
    """True when a RUN before `copy` (this stage or one it is built FROM) ran the same tool with
    the project left out: its dependencies are in that earlier layer."""
    first = analysis.per_file(_layered_installs).get(install.tool, {}).get(run.stage.index)
    return first is not None and first < copy.index


def _layered_installs(analysis: Analysis) -> dict[str, dict[int, int]]:
    """Per tool, for each stage: the first RUN there or up its FROM chain that installed the
    dependencies without the project (`uv sync --no-install-project`, `poetry install
    --no-root`). Computed once per file (`Analysis.per_file`)."""
    by_tool: dict[str, list[Run]] = {}
    for run in analysis.runs:
        for command in run.commands:
            install = run.python_install(command)
            if install is not None and install.project and _DEPENDENCIES_ONLY & install.options:
                by_tool.setdefault(install.tool, []).append(run)
    return {tool: first_in_chains(analysis.stages, runs) for tool, runs in by_tool.items()}


# What a path an instruction added holds below it: nothing known (a file, or a source gpuship
# cannot see: None), anything (a directory a RUN made, a clone or a cache: _ANYTHING), or what a
# directory of the build context holds (its context path).
_Holds = str | None  # a context path, _ANYTHING, or None
_ANYTHING = "\x00"


def _created_by_copy(
    analysis: Analysis, instruction: Instruction, state: State
) -> list[tuple[str, _Holds]]:
    """The paths a COPY/ADD adds, each with what it holds below it. A directory of the context
    is copied into the destination, which then holds what that directory holds; a file is put
    at the destination or, when the image already has a directory there, inside it (both are
    added, and neither holds anything: what lies below them may be the base image's). What a
    `--from` or unmatched source is, gpuship does not know: a file, as far as it can tell."""
    args = [a for a in instruction.args if not a.startswith("<<")]
    if len(args) < 2:
        return []
    *sources, raw_dest = (expand_word(a, state.env)[0] for a in args)
    dest = posixpath.normpath(posixpath.join(state.workdir, raw_dest))
    into = raw_dest.endswith("/") or len(sources) > 1
    context = analysis.context
    local = instruction.flag("from") is None and context.exists
    created: list[tuple[str, _Holds]] = []
    for source in sources:
        items = context.match(source) if local else []
        for item in items or [source.rstrip("/")]:
            if items and context.is_dir(item):
                created.append((dest, item))
                continue
            created.append((posixpath.join(dest, posixpath.basename(item)), None))
            if not into:
                created.append((dest, None))
    return created


def _created_by_run(configured: CacheOff, run: Run) -> list[tuple[str, _Holds]]:
    """What a RUN adds that a later RUN may delete: caches and clones (directories holding
    anything), curl/wget outputs (files)."""
    created: list[tuple[str, _Holds]] = [(c, _ANYTHING) for c in left_caches(configured, run)]
    env = run.state.env
    for command in run.commands:
        argv = command.argv
        for flag in ("-o", "--output", "-O", "--output-document"):
            if command.name in ("curl", "wget") and flag in argv:
                index = argv.index(flag)
                if index + 1 < len(argv):
                    path = container_path(run.state.workdir, argv[index + 1], env)
                    created.append((path, None))
        if command.name == "git" and "clone" in argv:
            positional = [a for a in argv[argv.index("clone") + 1 :] if not a.startswith("-")]
            if len(positional) >= 2:
                path = container_path(run.state.workdir, positional[1], env)
                created.append((path, _ANYTHING))
            elif positional:
                name = posixpath.basename(positional[0].rstrip("/")).removesuffix(".git")
                created.append((container_path(run.state.workdir, name, env), _ANYTHING))
    return created


def _waste(analysis: Analysis) -> Iterator[Hit]:
    configured = analysis.per_file(pip_cache_configured_off)
    for stage in analysis.final_stages():
        runs = {r.instruction.index: r for r in analysis.runs_of(stage)}
        depths = {t.rstrip("/").count("/") + 1 for r in runs.values() for _, _, t in _removed(r)}
        created = _Created(depths, analysis.context)
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            if instruction.keyword in ("COPY", "ADD") and not instruction.heredocs:
                for path, holds in _created_by_copy(analysis, instruction, state):
                    created.add(path, instruction, holds)
                continue
            run = runs.get(instruction.index)
            if run is None:
                continue
            yield from _deletions(run, created)
            yield from _rewrites(run, created)
            for path, holds in _created_by_run(configured, run):
                created.add(path, instruction, holds)


def _removed(run: Run) -> Iterator[tuple[Command, Word, str]]:
    """Each path an `rm` of `run` deletes (a trailing `*` dropped; not `/`), with its word."""
    for command in run.commands:
        if command.name != "rm":
            continue
        for word in command.words[1:]:
            if word.text.startswith("-"):
                continue
            target = container_path(run.state.workdir, word.text.rstrip("*"), run.state.env)
            if target != "/":
                yield command, word, target


def _deletions(run: Run, created: _Created) -> Iterator[Hit]:
    for command, word, target in _removed(run):
        origin = created.touched(target)
        if origin is not None:
            yield at_word(
                "GSL701",
                f"{target} was added at line {origin.start_line} "
                f"({origin.keyword}); deleting it in a later layer does not "
                "shrink the image",
                run,
                command,
                word,
            )


_OWNERSHIP = frozenset({"chown", "chgrp", "chmod"})


def _rewrites(run: Run, created: _Created) -> Iterator[Hit]:
    """GSL703: a recursive chown/chgrp/chmod of a tree an earlier instruction added."""
    for command in run.commands:
        if command.name not in _OWNERSHIP:
            continue
        options = [w.text for w in command.words[1:] if w.text.startswith("-")]
        if not any(o == "--recursive" or (not o.startswith("--") and "R" in o) for o in options):
            continue
        operands = [w for w in command.words[1:] if not w.text.startswith("-")]
        reference = any(o.startswith("--reference") for o in options)
        for word in operands if reference else operands[1:]:  # the owner or mode first
            target = container_path(run.state.workdir, word.text, run.env_at(command))
            origin = created.touched(target)
            if origin is not None and target != "/":
                yield at_word(
                    "GSL703",
                    f"`{command.name} -R` rewrites {target}, which line {origin.start_line} "
                    f"({origin.keyword}) added: this layer stores every file under it again",
                    run,
                    command,
                    word,
                )


class _Created:
    """The paths earlier layers of a stage added, each with the instruction that last added
    it, indexed so that "which path, first added, does deleting T touch" (T itself, a path
    below it, or one above it that holds T) costs the depth of T, not every path added so far
    (8,000 COPYs, then 8,000 RUNs deleting something). Directories are keys ending in "/";
    `depths`: how many "/" the deleted paths hold as such a key (`_removed`), the only depths
    a path added is filed under its directories at."""

    def __init__(self, depths: set[int], context: BuildContext) -> None:
        self._depths = depths
        self._context = context
        self._added: dict[str, tuple[int, Instruction]] = {}  # path -> (first added, last by)
        self._holds: dict[str, _Holds] = {}  # path -> what it holds below it
        self._as_directory: dict[str, str] = {}  # a path as "dir/" -> the first one added
        self._directory_depths: set[int] = set()
        self._below: dict[str, str] = {}  # "dir/" -> the first path added below it

    def add(self, path: str, instruction: Instruction, holds: _Holds) -> None:
        first = self._added.get(path)
        self._added[path] = (len(self._added) if first is None else first[0], instruction)
        if self._holds.get(path) != _ANYTHING:
            self._holds[path] = holds
        if first is not None:
            return  # filed when it was first added
        directory = path.rstrip("/") + "/"
        self._as_directory.setdefault(directory, path)
        self._directory_depths.add(directory.count("/"))
        for above in _directories_above(path, self._depths):
            self._below.setdefault(above, path)

    def touched(self, target: str) -> Instruction | None:
        """The instruction that last added the first-added path that deleting `target` takes
        (the path, something below it, or a directory holding it), or None."""
        found = [target] if target in self._added else []
        below = self._below.get(target.rstrip("/") + "/")
        found += [below] if below is not None else []
        for directory in _directories_above(target, self._directory_depths):
            above = self._as_directory.get(directory)
            if above is not None and self._holding(above, target[len(directory) :]):
                found.append(above)
        if not found:
            return None
        return self._added[min(found, key=lambda path: self._added[path][0])][1]

    def _holding(self, path: str, relative: str) -> bool:
        """Whether what `path` was added with holds `relative` below it."""
        holds = self._holds.get(path)
        if holds is None or holds == _ANYTHING:
            return holds is not None
        return self._context.sent(posixpath.join(holds, relative))


def _large_copies(analysis: Analysis) -> Iterator[Hit]:
    limit = int(analysis.config.large_copy_mib * 1024 * 1024)
    context = analysis.context
    if not context.exists:
        return
    for stage, instruction, state in context_copies(analysis.final_stages()):
        for raw in instruction.args[:-1]:
            source = expand_word(raw, state.env)[0]
            total = sum(f.size for m in context.match(source) for f in context.files_under(m))
            if total > limit:
                yield Hit(
                    "GSL801",
                    f"`{instruction.keyword} {source}` takes "
                    f"{human_size(total)} from the build context",
                    instruction.locate(raw, instruction.body_offset),
                    instruction,
                    stage,
                )
