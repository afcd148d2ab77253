"""Layer order, waste and size: what makes rebuilds slow and images big."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from gpuship.dockerfile.source import Instruction
from gpuship.lint.analysis import Analysis, Run, container_path
from gpuship.lint.checks.base import Hit, at_word
from gpuship.lint.checks.cache import left_caches
from gpuship.lint.checks.cuda import _CUDA_EXTENSIONS
from gpuship.lint.checks.weights import downloads
from gpuship.lint.packages import os_install
from gpuship.lint.stages import Stage, State, expand_word
from gpuship.units import human_size


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL601/602 (layer order), GSL701 (waste), GSL801 (large context copies)."""
    yield from _order(analysis)
    yield from _waste(analysis)
    yield from _large_copies(analysis)


_CODE_SUFFIXES = (".py", ".ipynb", ".js", ".ts", ".go", ".rs", ".cpp", ".cu")


def _whole_context_copy(instruction: Instruction) -> bool:
    if instruction.keyword not in ("COPY", "ADD") or instruction.flag("from") is not None:
        return False
    return any(a in (".", "./", "*") for a in instruction.args[:-1])


def _code_copy(analysis: Analysis, stage: Stage, instruction: Instruction) -> bool:
    """A COPY of source code (edited on every change): `*.py`, a directory of code, or a code
    file (`COPY handler.py /app/`).

    A single file that a later RUN of the stage runs or reads (`COPY download.py /opt/` then
    `RUN python /opt/download.py`) is that step's input, not source, so it does not count."""
    if instruction.keyword not in ("COPY", "ADD") or instruction.flag("from") is not None:
        return False
    context = analysis.context
    for source in instruction.args[:-1]:
        if "*" in source and source.lower().endswith(_CODE_SUFFIXES):
            return True
        if (
            context.exists
            and context.is_dir(source.rstrip("/"))
            and any(
                f.path.endswith(_CODE_SUFFIXES) for f in context.files_under(source.rstrip("/"))
            )
        ):
            return True
        if source.lower().endswith(_CODE_SUFFIXES) and not _used_later(
            analysis, stage, instruction, posixpath.basename(source)
        ):
            return True
    return False


def _used_later(analysis: Analysis, stage: Stage, copy: Instruction, name: str) -> bool:
    """True when a RUN after `copy` in `stage` names the file `name`."""
    return any(
        run.instruction.index > copy.index and name in run.instruction.text.value
        for run in analysis.runs_of(stage)
    )


def _order(analysis: Analysis) -> Iterator[Hit]:
    heavy_runs = {d.run.instruction.index: d for d in downloads(analysis)}
    for stage in analysis.reachable_stages:
        copy: Instruction | None = None
        reported = False
        runs = {r.instruction.index: r for r in analysis.runs_of(stage)}
        whole = False
        for instruction in stage.instructions:
            if copy is None and (
                _whole_context_copy(instruction) or _code_copy(analysis, stage, instruction)
            ):
                copy = instruction
                whole = _whole_context_copy(instruction)
            run = runs.get(instruction.index)
            if copy is None or run is None:
                continue
            if not reported:
                hit = _dependency_install(run, copy, whole)
                if hit is not None:
                    reported = True
                    yield hit
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
                    if spec.word and any(spec.text.lower().startswith(e) for e in _CUDA_EXTENSIONS):
                        yield at_word(
                            "GSL602",
                            f"`{spec.text}` compiles kernels after `COPY "
                            f"{copy.args[0]}` (line {copy.start_line}): every code "
                            "edit recompiles it",
                            run,
                            command,
                            spec.word,
                        )


def _dependency_install(run: Run, copy: Instruction, whole: bool) -> Hit | None:
    """The first dependency install in `run`. After a code-only COPY, `uv sync` / `poetry
    install` install the project itself (the documented pattern), so only a whole-context
    COPY makes them a finding."""
    for command in run.commands:
        install = run.python_install(command)
        if install is not None:
            named = [s for s in install.specs if s.kind in ("name", "vcs") and s.word]
            project = (
                whole and install.verb in ("sync", "install") and install.tool in ("uv", "poetry")
            )
            if install.requirement_files or install.env_files or named or project:
                word = command.words[0]
                return at_word(
                    "GSL601",
                    f"dependencies install after `COPY {copy.args[0]}` "
                    f"(line {copy.start_line}): every code edit re-runs this install",
                    run,
                    command,
                    word,
                )
        if os_install(command) is not None:
            return at_word(
                "GSL601",
                f"OS packages install after `COPY {copy.args[0]}` (line "
                f"{copy.start_line}): every code edit re-runs this install",
                run,
                command,
                command.words[0],
            )
    return None


def _created_by_copy(instruction: Instruction, state: State) -> list[str]:
    args = [a for a in instruction.args if not a.startswith("<<")]
    if len(args) < 2:
        return []
    *sources, raw_dest = (expand_word(a, state.env)[0] for a in args)
    dest = posixpath.normpath(posixpath.join(state.workdir, raw_dest))
    if raw_dest.endswith("/") or len(sources) > 1:
        return [posixpath.join(dest, posixpath.basename(s.rstrip("/"))) for s in sources]
    return [dest]


def _created_by_run(run: Run) -> list[str]:
    created = left_caches(run)
    env = run.state.env
    for command in run.commands:
        argv = command.argv
        for flag in ("-o", "--output", "-O", "--output-document"):
            if command.name in ("curl", "wget") and flag in argv:
                index = argv.index(flag)
                if index + 1 < len(argv):
                    created.append(container_path(run.state.workdir, argv[index + 1], env))
        if command.name == "git" and "clone" in argv:
            positional = [a for a in argv[argv.index("clone") + 1 :] if not a.startswith("-")]
            if len(positional) >= 2:
                created.append(container_path(run.state.workdir, positional[1], env))
            elif positional:
                name = posixpath.basename(positional[0].rstrip("/")).removesuffix(".git")
                created.append(container_path(run.state.workdir, name, env))
    return created


def _waste(analysis: Analysis) -> Iterator[Hit]:
    for stage in analysis.final_stages():
        created: dict[str, Instruction] = {}
        runs = {r.instruction.index: r for r in analysis.runs_of(stage)}
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            if instruction.keyword in ("COPY", "ADD") and not instruction.heredocs:
                for path in _created_by_copy(instruction, state):
                    created[path] = instruction
                continue
            run = runs.get(instruction.index)
            if run is None:
                continue
            yield from _deletions(run, stage, created)
            for path in _created_by_run(run):
                created[path] = instruction


def _deletions(run: Run, stage: Stage, created: dict[str, Instruction]) -> Iterator[Hit]:
    for command in run.commands:
        if command.name != "rm":
            continue
        for word in command.words[1:]:
            if word.text.startswith("-"):
                continue
            target = container_path(run.state.workdir, word.text.rstrip("*"), run.state.env)
            if target == "/":
                continue
            for path, origin in created.items():
                if (
                    path == target
                    or path.startswith(target.rstrip("/") + "/")
                    or (target.startswith(path.rstrip("/") + "/"))
                ):
                    yield at_word(
                        "GSL701",
                        f"{target} was added at line {origin.start_line} "
                        f"({origin.keyword}); deleting it in a later layer does not "
                        "shrink the image",
                        run,
                        command,
                        word,
                    )
                    break


def _large_copies(analysis: Analysis) -> Iterator[Hit]:
    limit = int(analysis.config.large_copy_mib * 1024 * 1024)
    context = analysis.context
    if not context.exists:
        return
    for stage in analysis.final_stages():
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            if instruction.keyword not in ("COPY", "ADD") or instruction.flag("from") is not None:
                continue
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
