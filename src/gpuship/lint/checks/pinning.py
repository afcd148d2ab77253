"""Pinning: base images, Python/OS packages (also inside requirement and env files), VCS
sources, downloads, and the unquoted specifier that the shell turns into a redirect."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from gpuship.dockerfile.source import Instruction, Span
from gpuship.errors import InputError
from gpuship.lint.analysis import Analysis, Run, container_path
from gpuship.lint.checks.base import (
    WEIGHT_SUFFIXES,
    Hit,
    at_instruction,
    at_word,
    by_pipeline,
    executed_runs,
    image_reference,
    image_token,
)
from gpuship.lint.checks.leftovers import URL
from gpuship.lint.packages import (
    PythonInstall,
    Spec,
    is_version_tag,
    os_install,
    os_package_pinned,
    project_path,
)
from gpuship.lint.shell import SHELLS, Command, Word, expand_shell
from gpuship.lint.stages import Env, Stage, expand
from gpuship.reference import Reference, parse_reference
from gpuship.report import Severity

# The installers themselves, upgraded before use (`pip install -U pip`, `conda update conda`):
# a bootstrap step, not a dependency of the image's code.
_BOOTSTRAP = frozenset({"pip", "setuptools", "wheel", "uv", "conda", "mamba"})
_CHECKSUM_TOOLS = frozenset(
    {
        "sha256sum",
        "sha512sum",
        "sha1sum",
        "sha384sum",
        "md5sum",
        "shasum",
        "b2sum",
        "cosign",
        "minisign",
        "signify",
    }
)
_HEX = re.compile(r"^[0-9a-fA-F]{7,40}$")
# `git clone` options whose value is the next word.
_CLONE_VALUE_OPTIONS = frozenset(
    {"--depth", "-o", "--origin", "--reference", "-c", "--config", "-j", "--jobs", "-u"}
)
_POSITIONAL = re.compile(r"^\$(?:[@*]|\{?[0-9]+\}?)$")


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL101-109: base images, packages, VCS sources, downloads, unquoted specifiers."""
    yield from _base_images(analysis)
    yield from _copy_images(analysis)
    seen_files: set[tuple[str, int, int]] = set()
    moves = _pinned_moves(analysis)
    for run in executed_runs(analysis):
        for command in run.commands:
            env = run.env_at(command)
            install = run.python_install(command)
            if install is not None:
                yield from _python(analysis, run, install, env, seen_files)
                yield from _redirects(run, install)
            yield from _os_packages(run, command)
            yield from _git_clone(moves, run, command)
        yield from _downloads(run)
    yield from _add_urls(analysis)


def _base_images(analysis: Analysis) -> Iterator[Hit]:
    config = analysis.config
    for stage in analysis.reachable_stages:
        reference = image_reference(stage)
        if reference is None:
            continue
        token = image_token(stage)
        instruction = stage.from_instruction
        shown = stage.base if stage.base == token else f"{token} (= {stage.base})"
        if reference.digest is None:
            if reference.tag is None:
                yield at_instruction(
                    "GSL101",
                    f"base image {shown} has no tag: it means `latest`, which moves",
                    instruction,
                    stage,
                    token,
                )
            elif reference.tag == "latest":
                yield at_instruction(
                    "GSL101", f"base image {shown} uses the `latest` tag", instruction, stage, token
                )
            elif _mutable(reference.tag, config.mutable_tags):
                yield at_instruction(
                    "GSL102",
                    f"base image {shown} uses the moving tag `{reference.tag}`",
                    instruction,
                    stage,
                    token,
                )
            hit = at_instruction(
                "GSL103", f"base image {shown} is not pinned by digest", instruction, stage, token
            )
            if config.require_digest:
                hit = Hit(
                    hit.rule,
                    hit.message,
                    hit.span,
                    hit.instruction,
                    hit.stage,
                    severity=Severity.WARNING,
                )
            yield hit
        untrusted = _untrusted(reference, config.trusted_registries)
        if untrusted:
            yield at_instruction(
                "GSL104", f"base image {shown} {untrusted}", instruction, stage, token
            )


def _copy_images(analysis: Analysis) -> Iterator[Hit]:
    """GSL101/102/104 for images named by `COPY --from=` and `RUN --mount=from=` (not stages)."""
    config = analysis.config
    names = analysis.stage_names
    for stage in analysis.reachable_stages:
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            refs = (
                list(instruction.flag_values("from"))
                if instruction.keyword
                in (
                    "COPY",
                    "ADD",
                )
                else []
            )
            for mount in instruction.flag_values("mount"):
                refs.extend(o[5:] for o in mount.split(",") if o.startswith("from="))
            for raw in refs:
                value, known = expand(raw, state.env)
                if not known or value.lower() in names or value.isdigit():
                    continue
                try:
                    reference = parse_reference(value, default_tag=None)
                except InputError:  # not an image reference: BuildKit reports it
                    continue
                where = f"--from={raw}" if raw == value else f"--from={raw} (= {value})"
                at = _flag_hit(instruction, stage, raw)
                if reference.digest is None:
                    if reference.tag is None or reference.tag == "latest":
                        what = "has no tag" if reference.tag is None else "uses the `latest` tag"
                        yield at(
                            "GSL101",
                            f"image {where} {what}: each build copies from whatever it is now",
                        )
                    elif _mutable(reference.tag, config.mutable_tags):
                        yield at("GSL102", f"image {where} uses the moving tag `{reference.tag}`")
                untrusted = _untrusted(reference, config.trusted_registries)
                if untrusted:
                    yield at("GSL104", f"image {where} {untrusted}")


def _untrusted(reference: Reference, trusted: tuple[str, ...]) -> str | None:
    """`comes from R, not a trusted registry (...)` when a trust list is set and R is not in it."""
    if not trusted or any(fnmatch.fnmatchcase(reference.registry, p.lower()) for p in trusted):
        return None
    return f"comes from {reference.registry}, not a trusted registry ({', '.join(trusted)})"


def _flag_hit(instruction: Instruction, stage: Stage, value: str) -> Callable[[str, str], Hit]:
    """Hits on the `from=VALUE` of an instruction's flags (not the same text in its args)."""
    offset = instruction.text.value.find("from=" + value)
    start = offset + len("from=") if offset >= 0 else 0
    span = instruction.text.span(start, start + len(value))

    def hit(rule: str, message: str) -> Hit:
        return Hit(rule, message, span, instruction, stage)

    return hit


def _mutable(tag: str, mutable: tuple[str, ...]) -> bool:
    lowered = tag.lower()
    return any(lowered == t or lowered.startswith(t + "-") for t in mutable)


def _python(
    analysis: Analysis,
    run: Run,
    install: PythonInstall,
    env: Env,
    seen_files: set[tuple[str, int, int]],
) -> Iterator[Hit]:
    yield from _remote_requirement_files(run, install, env)
    constrained = _constrained(analysis, run, install, env)
    wheelhouse = _local_wheelhouse(install, env)
    yield from _command_specs(run, install, constrained, wheelhouse)
    yield from _missing_locks(analysis, run, install)
    yield from _file_specs(analysis, run, install, env, constrained, wheelhouse, seen_files)


def _constrained(analysis: Analysis, run: Run, install: PythonInstall, env: Env) -> set[str]:
    """The names the install's constraints files pin (`_ANY` for a file gpuship cannot read)."""
    constrained: set[str] = set()
    for word in install.constraint_files:
        if not _readable(analysis, run, word.text, env):
            # A constraints file gpuship cannot read (`-c https://...`, one the build writes)
            # may pin any package: their versions are unknown, not unpinned.
            constrained.add(_ANY)
            continue
        for item in analysis.file_specs(run, word.text, env):
            if item.spec.pinned:
                constrained.add(item.spec.name)
    return constrained


def _command_specs(
    run: Run, install: PythonInstall, constrained: set[str], wheelhouse: bool
) -> Iterator[Hit]:
    """Unpinned packages named on the install's command line."""
    command = install.command
    upgrade = bool({"-U", "--upgrade"} & install.options) or (
        install.tool == "conda" and install.verb == "update"
    )
    for spec in install.specs:
        if spec.word is None:
            continue
        if spec.kind == "vcs" and not spec.pinned:
            yield at_word(
                "GSL106",
                f"`{spec.text}` installs a branch head, not a commit",
                run,
                command,
                spec.word,
            )
        elif spec.kind == "name" and not spec.pinned and not {spec.name, _ANY} & constrained:
            if (upgrade and spec.name in _BOOTSTRAP) or wheelhouse:
                continue
            yield at_word("GSL105", _unpinned_message(install.tool, spec), run, command, spec.word)


def _missing_locks(analysis: Analysis, run: Run, install: PythonInstall) -> Iterator[Hit]:
    """`uv sync` and `poetry install` resolve fresh versions without their lock file."""
    command = install.command
    if install.tool == "uv" and install.verb == "sync" and install.project:
        frozen = bool({"--frozen", "--locked"} & install.options)
        if not frozen and analysis.context.exists and not _lock_in_context(analysis, "uv.lock"):
            yield at_word(
                "GSL105",
                "`uv sync` without uv.lock in the build context resolves fresh versions",
                run,
                command,
                _verb_word(command, "sync"),
            )
    if (
        install.tool == "poetry"
        and install.verb == "install"
        and analysis.context.exists
        and not _lock_in_context(analysis, "poetry.lock")
    ):
        yield at_word(
            "GSL105",
            "`poetry install` without poetry.lock in the build context resolves fresh versions",
            run,
            command,
            _verb_word(command, "install"),
        )


def _file_specs(
    analysis: Analysis,
    run: Run,
    install: PythonInstall,
    env: Env,
    constrained: set[str],
    wheelhouse: bool,
    seen_files: set[tuple[str, int, int]],
) -> Iterator[Hit]:
    """Unpinned packages in the requirements, environment and project files the install reads
    (each file line reported once across the Dockerfile: `seen_files`)."""
    # `pip install .`, `pip install ".[serve]"` and `uv pip install -e ./app` install the
    # project's pyproject dependencies (and those of the extras named).
    files: list[tuple[str, bool, tuple[str, ...]]] = [
        (w.text, w in install.env_files, ())
        for w in (*install.requirement_files, *install.env_files)
    ]
    files += [(manifest, False, extras) for _, manifest, extras in project_manifests(install)]
    for path, conda, extras in files:
        for item in analysis.file_specs(run, path, env, conda=conda, extras=extras):
            found, source, line, column = item.spec, item.source, item.line, item.column
            key = (source, line, column)
            if key in seen_files or found.pinned or {found.name, _ANY} & constrained:
                continue
            seen_files.add(key)
            file = analysis.context.root / source
            message = _unpinned_message(item.tool or install.tool, found)
            if found.kind == "vcs":
                yield Hit(
                    "GSL106",
                    f"`{found.text}` installs a branch head, not a commit",
                    Span(line, column, line, column + len(found.text)),
                    run.instruction,
                    run.stage,
                    file,
                )
            elif found.kind == "name" and not wheelhouse:
                yield Hit(
                    "GSL105",
                    f"{message} (installed by line "
                    f"{run.instruction.start_line} of {analysis.display})",
                    Span(line, column, line, column + len(found.text)),
                    run.instruction,
                    run.stage,
                    file,
                )


# Where a hosted file's git ref sits in its URL: raw.githubusercontent.com/OWNER/REPO/REF/...,
# github.com/OWNER/REPO/(raw|blob)/REF/..., gitlab.example/GROUP/REPO/-/raw/REF/...
_RAW_URL = (
    re.compile(
        r"^https?://raw\.githubusercontent\.com/[^/]+/[^/]+/(?:refs/(?:heads|tags)/)?([^/]+)/"
    ),
    re.compile(r"^https?://github\.com/[^/]+/[^/]+/(?:raw|blob)/(?:refs/(?:heads|tags)/)?([^/]+)/"),
    re.compile(r"^https?://[^/]+/.+?/-/(?:raw|blob)/([^/]+)/"),
)


_ANY = "*"  # in a set of constrained names: an unread constraints file may pin any


def project_manifests(install: PythonInstall) -> list[tuple[Spec, str, tuple[str, ...]]]:
    """Each local project an install installs with its dependencies (`pip install .`, `-e
    ./app`, `".[serve]"`): its spec, its pyproject.toml and the extras named; none with
    --no-deps."""
    if "--no-deps" in install.options or install.verb != "install":
        return []
    found = []
    for spec in install.specs:
        if spec.kind == "path" and spec.word and not spec.text.endswith((".whl", ".tar.gz")):
            path, extras = project_path(spec.text)
            found.append((spec, path.rstrip("/") + "/pyproject.toml", extras))
    return found


def _readable(analysis: Analysis, run: Run, path: str, env: Env) -> bool:
    """Whether gpuship reads a requirements/constraints file: one a COPY brought from the
    build context, not a URL or a file the build makes."""
    value, known = expand_shell(path, env)
    if not known or "://" in value:
        return False
    container = container_path(run.state.workdir, value, env)
    source = analysis.context_source(run.stage, run.instruction, container)
    return source is not None and analysis.context.read_text(source) is not None


def _remote_requirement_files(run: Run, install: PythonInstall, env: Env) -> Iterator[Hit]:
    """GSL106 for `-r https://raw.githubusercontent.com/org/repo/main/requirements.txt`: the file
    (and the versions in it) is whatever the branch holds at build time."""
    for word in (*install.requirement_files, *install.constraint_files):
        url, known = expand_shell(word.text, env)
        if not known:
            continue
        ref = next((m.group(1) for p in _RAW_URL if (m := p.match(url))), None)
        if ref is None or is_version_tag(ref) or _HEX.match(ref):
            continue
        yield at_word(
            "GSL106",
            f"`{word.text}` reads a requirements file from branch `{ref}`: what it installs "
            "changes with every push to it; use a commit or tag in the URL",
            run,
            install.command,
            word,
        )


def _local_wheelhouse(install: PythonInstall, env: Env) -> bool:
    """`pip install --no-index --find-links=/wheels x`: packages come only from a local
    directory built or copied earlier, so its wheels are the pins (not an index's newest)."""
    if "--no-index" not in install.options or not install.find_links:
        return False
    locations = [expand_shell(w.text, env) for w in install.find_links]
    return all(
        known and ("://" not in text or text.lower().startswith("file://"))
        for text, known in locations
    )


def _verb_word(command: Command, verb: str) -> Word:
    """The subcommand's word (`sync` in `uv --no-cache sync`), else the program's."""
    return next((w for w in command.words[1:] if w.text == verb), command.words[0])


def _unpinned_message(tool: str, spec: Spec) -> str:
    if spec.specifier:
        return f"`{spec.text}` is a range, not an exact pin ({tool} installs the newest match)"
    return f"`{spec.text}` is not pinned: {tool} installs whatever is newest at build time"


def _lock_in_context(analysis: Analysis, name: str) -> bool:
    return any(item.path.endswith(name) for item in analysis.context.files_under("."))


# A project name with optional extras (PEP 508), and what follows `>`/`<` in a specifier.
_BARE_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[^\]]*\])?$")
_VERSION_TARGET = re.compile(r"^=?\s*v?\d")


def _redirects(run: Run, install: PythonInstall) -> Iterator[Hit]:
    command = install.command
    text = command.source.value
    for redirect in command.redirects:
        if redirect.operator not in (">", "<", ">>") or redirect.start == 0:
            continue
        if text[redirect.start - 1].isspace():
            continue
        before = next((w for w in reversed(command.words) if w.end <= redirect.start), None)
        if before is None or before.end != redirect.start:
            continue
        # `numpy==1.26.4>/dev/null` and `-r req.txt>/dev/null` redirect output on purpose:
        # only a bare name followed by a version (`torch>=2.1`, `numpy<2`) is a specifier.
        if not (_BARE_NAME.match(before.text) and _VERSION_TARGET.match(redirect.target.text)):
            continue
        written = text[before.start : redirect.target.end]
        action = "reads stdin from" if redirect.operator == "<" else "writes a file named"
        yield at_word(
            "GSL109",
            f"`{written}` is unquoted: the shell installs `{before.text}` unpinned and "
            f"{action} `{redirect.target.text}`",
            run,
            command,
            before,
        )


def _os_packages(run: Run, command: Command) -> Iterator[Hit]:
    install = os_install(command)
    if install is None:
        return
    unpinned = [
        w
        for w in install.packages
        if not os_package_pinned(install.manager, w.text, module=install.modules)
    ]
    if unpinned:
        names = ", ".join(w.text for w in unpinned[:6]) + (" ..." if len(unpinned) > 6 else "")
        yield at_word(
            "GSL107",
            f"{command.name} installs without versions: {names}",
            run,
            command,
            unpinned[0],
        )


def _clone_directory(command: Command, url: str) -> str:
    """The name of the directory a clone creates: its second operand, else the URL's last
    segment without `.git`."""
    argv = command.argv
    operands = []
    index = argv.index("clone") + 1
    while index < len(argv):
        text = argv[index]
        if text in _CLONE_VALUE_OPTIONS or text in ("-b", "--branch"):
            index += 2
            continue
        if not text.startswith("-"):
            operands.append(text)
        index += 1
    target = operands[1] if len(operands) > 1 else url.rstrip("/").removesuffix(".git")
    return posixpath.basename(target.rstrip("/").removesuffix(".git"))


def _git_clone(moves: _Moves, run: Run, command: Command) -> Iterator[Hit]:
    texts = command.argv
    if command.name != "git" or "clone" not in texts:
        return
    start = texts.index("clone") + 1
    url_word = None
    branch = None
    index = start
    while index < len(command.words):
        text = command.words[index].text
        if text in ("-b", "--branch") and index + 1 < len(command.words):
            branch = command.words[index + 1].text
            index += 2
            continue
        if text in _CLONE_VALUE_OPTIONS:
            index += 2  # `--depth 1`: the value is not the URL
            continue
        if text.startswith(("--branch=", "--revision=")):
            branch = text.split("=", 1)[1]
        elif not text.startswith("-") and url_word is None:
            url_word = command.words[index]
        index += 1
    if url_word is None or "huggingface.co" in url_word.text:
        return  # a Hugging Face clone is a weights download, reported by its own rule
    if _POSITIONAL.match(url_word.text):
        return  # a function's `git clone "$@"`: its caller's arguments may name the ref
    if branch is not None and _pinned_ref(branch, run.env_at(command)):
        return
    directory = _clone_directory(command, url_word.text)
    if _moved_later(moves, run, directory):
        return
    checkout = moves.other.get((run.stage.index, directory))
    if checkout is not None and checkout[0] >= run.instruction.index:
        value = expand(checkout[1], run.env_at(command))[0]
        shown = f"`{value}`" + (f" ({checkout[1]})" if value != checkout[1] else "")
        yield at_word(
            "GSL106",
            f"`git clone {url_word.text}` is checked out at {shown}, which gpuship cannot tell "
            "from a branch: a commit sha pins it",
            run,
            command,
            url_word,
            severity=Severity.NOTE,
        )
        return
    if branch is None:
        what = "the default branch"
    else:
        value = expand(branch, run.env_at(command))[0]
        what = f"branch `{value}`" + (f" ({branch})" if value != branch else "")
    yield at_word(
        "GSL106",
        f"`git clone {url_word.text}` builds from {what}; check out a commit",
        run,
        command,
        url_word,
    )


@dataclass(frozen=True)
class _Moves:
    """Where the RUNs of a target move a clone to a commit or tag."""

    last: dict[tuple[int, str], int]  # (stage, a directory it works in) -> the last such RUN
    own: frozenset[int]  # RUNs that clone one repository and move it: a move there is its
    # `git checkout/switch REF` of a ref gpuship cannot tell from a branch (`b3561`, a
    # variable's value): (stage, directory) -> (the last such RUN, the ref as written).
    other: dict[tuple[int, str], tuple[int, str]] = field(default_factory=dict)


def _pinned_moves(analysis: Analysis) -> _Moves:
    """The RUNs that move a clone to a commit or tag (`git checkout <sha>`, or
    reset/switch/fetch), by the names of the directories they work in (WORKDIR, `cd X`,
    `git -C X`). Computed once per target: a stage may hold thousands of RUNs."""
    last: dict[tuple[int, str], int] = {}
    other: dict[tuple[int, str], tuple[int, str]] = {}
    own: set[int] = set()
    for run in executed_runs(analysis):
        places: set[str] = set()
        clones = 0
        for command in run.commands:
            argv = command.argv
            if command.name in ("cd", "pushd") and len(argv) > 1:
                places |= _components(argv[-1])
            clones += command.name == "git" and "clone" in argv
            if command.name != "git" or not any(
                v in argv for v in ("checkout", "reset", "switch", "fetch")
            ):
                continue
            if "-C" in argv and argv.index("-C") + 1 < len(argv):
                places |= _components(argv[argv.index("-C") + 1])
            env = run.env_at(command)
            skip = {argv[argv.index("-C") + 1]} if "-C" in argv[:-1] else set()
            if any(
                _pinned_ref(a, env) for a in argv[2:] if not a.startswith("-") and a not in skip
            ):
                # The WORKDIR's names only for a RUN that moves one: a WORKDIR may be up to
                # PATH_MAX deep, and a RUN of thousands in it need not pay for its names.
                places |= _components(run.state.workdir)
                if clones == 1:
                    own.add(run.instruction.index)
                for place in places:  # RUNs come in file order: the last one stays
                    last[(run.stage.index, place)] = run.instruction.index
                break
            ref = _checkout_ref(argv, skip)
            if ref is not None:
                for place in places | _components(run.state.workdir):
                    other[(run.stage.index, place)] = (run.instruction.index, ref)
    return _Moves(last, frozenset(own), other)


def _checkout_ref(argv: list[str], skip: set[str]) -> str | None:
    """The ref of `git checkout REF` / `git switch --detach REF` (not `checkout -- FILE`)."""
    verb = next((v for v in ("checkout", "switch") if v in argv), None)
    if verb is None:
        return None
    for arg in argv[argv.index(verb) + 1 :]:
        if arg == "--":
            return None
        if not arg.startswith("-") and arg not in skip:
            return arg
    return None


def _components(path: str) -> set[str]:
    return {part for part in path.split("/") if part}


def _moved_later(moves: _Moves, run: Run, directory: str) -> bool:
    """A move in the clone's directory (WORKDIR, `cd`, `git -C`), in the clone's own RUN or a
    later RUN of the stage; in a RUN that clones one repository, any move there is its."""
    index = run.instruction.index
    return moves.last.get((run.stage.index, directory), -1) >= index or index in moves.own


def _pinned_ref(ref: str, env: Env) -> bool:
    """A commit sha or a release tag (`v1.4.2`, `tags/v1.4.2`), or a value decided at build
    time (an ARG with no default, a `$(...)` substitution)."""
    value, known = expand_shell(ref, env)
    value = value.removeprefix("refs/").removeprefix("tags/")
    return not known or is_version_tag(value) or bool(_HEX.match(value))


def _downloads(run: Run) -> Iterator[Hit]:
    commands = list(run.commands)
    pipelines = by_pipeline(commands)
    names = {c.name for c in commands}
    if names & _CHECKSUM_TOOLS or any(c.name == "gpg" and "--verify" in c.argv for c in commands):
        return
    for command in commands:
        if command.name not in ("curl", "wget"):
            continue
        urls = [w for w in command.words[1:] if URL.match(w.text)]
        if not urls or _discarded(command):
            continue
        piped = [c for c in pipelines[command.pipeline] if c.position > command.position]
        if any(
            c.name in SHELLS
            or c.name.startswith("python")
            or c.name in ("gpg", "apt-key", "tee", "jq")
            for c in piped
        ):
            continue
        url = urls[0]
        if url.text.lower().split("?")[0].endswith(WEIGHT_SUFFIXES) or "/resolve/" in url.text:
            continue  # weights: reported by the weights rule
        yield at_word(
            "GSL108",
            f"{command.name} downloads {url.text} without verifying a checksum",
            run,
            command,
            url,
        )


def _discarded(command: Command) -> bool:
    argv = command.argv
    return "/dev/null" in argv or "-I" in argv or "--head" in argv or "--spider" in argv


def _add_urls(analysis: Analysis) -> Iterator[Hit]:
    for stage in analysis.reachable_stages:
        for instruction in stage.instructions:
            if instruction.keyword != "ADD" or instruction.flag("checksum"):
                continue
            for arg in instruction.args[:-1]:
                lowered = arg.lower()
                if URL.match(arg) and not lowered.split("?")[0].endswith(WEIGHT_SUFFIXES):
                    if arg.endswith(".git") or "#" in arg:
                        continue
                    yield at_instruction(
                        "GSL108", f"ADD {arg} without --checksum", instruction, stage, arg
                    )
