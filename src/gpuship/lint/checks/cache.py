"""Caches left in the final image: pip, uv, conda, poetry, apt lists, dnf/yum/apk."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from gpuship.lint.analysis import Analysis, Run
from gpuship.lint.checks.base import (
    Hit,
    at_instruction,
    at_word,
    first_in_chains,
    home,
    image_reference,
    image_runs,
    removes,
    truthy,
    user_cache,
)
from gpuship.lint.checks.weights import copied_stage
from gpuship.lint.packages import PythonInstall, os_download
from gpuship.lint.shell import SHELLS, Command, expand_shell
from gpuship.lint.stages import Env, expand_word


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL301-306: caches left by installs in the stages of the final image."""
    yield from _copied_pkgs(analysis)
    configured = analysis.per_file(pip_cache_configured_off)
    for run in image_runs(analysis):
        for command in run.commands:
            env = run.env_at(command)
            install = run.python_install(command)
            if install is not None:
                if install.tool == "pip" and not _pip_clean(
                    configured, run, command, env, install.options
                ):
                    yield at_word(
                        "GSL301",
                        "pip keeps its cache (a second copy of every wheel) in this layer",
                        run,
                        command,
                        command.words[0],
                    )
                elif install.tool == "uv" and not _uv_clean(run, command, env, install.options):
                    yield at_word(
                        "GSL302",
                        "uv keeps its cache (every wheel it installed) in this layer",
                        run,
                        command,
                        command.words[0],
                    )
                elif install.tool == "conda" and not _conda_clean(run, command):
                    yield at_word(
                        "GSL303",
                        f"{command.name} leaves package tarballs in pkgs/ "
                        "(no `clean --all` in this RUN)",
                        run,
                        command,
                        command.words[0],
                    )
                elif install.tool == "poetry" and not _poetry_clean(run, command, env, install):
                    yield at_word(
                        "GSL306",
                        "poetry keeps its cache (downloaded wheels and sdists) in this layer",
                        run,
                        command,
                        command.words[0],
                    )
            yield from _os_caches(run, command)
            installer = conda_installer(command)
            if installer is not None and not _conda_clean(run, command):
                yield at_word(
                    "GSL303",
                    f"the {installer} installer leaves the packages it installed in pkgs/ "
                    "(no `conda clean --all` or `rm` of pkgs/ in this RUN)",
                    run,
                    command,
                    command.words[0],
                )


# Installers of a conda distribution (Miniconda3-latest-Linux-x86_64.sh, Miniforge3-...sh,
# Mambaforge-...sh, Anaconda3-...sh): they unpack every package into PREFIX/pkgs and keep it,
# which is why continuumio/miniconda3's own Dockerfile runs `conda clean -afy` after one.
_CONDA_INSTALLER = re.compile(r"(?i)(miniconda|miniforge|mambaforge|anaconda)[\w.\-]*\.sh$")


@dataclass(frozen=True)
class _LeftPkgs:
    """A conda package cache a RUN left full: the pkgs/ directory and what filled it."""

    pkgs: str
    run: Run
    what: str


# Where the conda of these images lives (their Dockerfiles: continuumio's and conda-forge's
# CONDA_DIR, micromamba's MAMBA_ROOT_PREFIX).
_CONDA_IMAGES = {
    "docker.io/continuumio/miniconda3": "/opt/conda",
    "docker.io/continuumio/anaconda3": "/opt/conda",
    "docker.io/condaforge/miniforge3": "/opt/conda",
    "docker.io/condaforge/mambaforge": "/opt/conda",
    "docker.io/mambaorg/micromamba": "/opt/conda",
}
# Where each installer puts conda without `-p` (its `-h`: PREFIX defaults to $HOME/<name>).
_INSTALLER_PREFIX = {
    "Miniconda": "miniconda3",
    "Miniforge": "miniforge3",
    "Mambaforge": "mambaforge",
    "Anaconda": "anaconda3",
}


def _copied_pkgs(analysis: Analysis) -> Iterator[Hit]:
    """GSL303 at a `COPY --from=STAGE DIR` of the final image that takes a conda pkgs/
    directory a RUN of that stage's chain left full (nothing later in the chain cleaned it)."""
    left = analysis.per_file(_left_pkgs)
    for stage in analysis.final_stages():
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            from_stage = instruction.flag("from")
            if instruction.keyword not in ("COPY", "ADD") or from_stage is None:
                continue
            index = copied_stage(analysis, from_stage, state)
            for raw in instruction.args[:-1] if index is not None else ():
                source = posixpath.normpath("/" + expand_word(raw, state.env)[0].lstrip("/"))
                for found in left.get(index, ()) if index is not None else ():
                    if found.pkgs == source or found.pkgs.startswith(source.rstrip("/") + "/"):
                        yield at_instruction(
                            "GSL303",
                            f"`{instruction.keyword} --from={from_stage} {raw}` copies "
                            f"{found.pkgs}, the package tarballs {found.what} (line "
                            f"{found.run.instruction.start_line}) left there",
                            instruction,
                            stage,
                            raw,
                        )
                        break


def _left_pkgs(analysis: Analysis) -> dict[int, tuple[_LeftPkgs, ...]]:
    """For each stage, the conda pkgs/ directories its filesystem holds full: left by a RUN
    there or up its FROM chain, not cleaned by a later one. Once per file."""
    found: dict[int, tuple[_LeftPkgs, ...]] = {}
    for stage in analysis.stages:  # a parent always comes earlier in the file
        left = list(found.get(stage.parent, ())) if stage.parent is not None else []
        root = _CONDA_IMAGES.get(str(getattr(image_reference(stage), "repository", "")))
        for run in analysis.runs_of(stage):
            left = [f for f in left if not _cleans(run, f.pkgs)]
            for command in run.commands:
                prefix, what = _pkgs_filler(run, command, root)
                if prefix is not None:
                    root = root or prefix
                    if not _conda_clean(run, command):
                        left.append(_LeftPkgs(prefix.rstrip("/") + "/pkgs", run, what))
        found[stage.index] = tuple(left)
    return found


def _pkgs_filler(run: Run, command: Command, root: str | None) -> tuple[str | None, str]:
    """The conda prefix whose pkgs/ `command` fills (an installer's `-p`, an install's
    `-p`/`--prefix`, else the root conda), and what fills it; (None, "") when it fills none
    or the prefix is unknown."""
    env = run.env_at(command)
    installer = conda_installer(command)
    if installer is not None:
        argv = command.argv
        prefix = argv[argv.index("-p") + 1] if "-p" in argv[:-1] else None
        default = home(env) + "/" + _INSTALLER_PREFIX[installer]
        value, known = expand_shell(prefix, env) if prefix else (default, True)
        return (value if known else None), f"the {installer} installer"
    install = run.python_install(command)
    if install is None or install.tool != "conda":
        return None, ""
    argv = command.argv
    option = next((o for o in ("-p", "--prefix") if o in argv[:-1]), None)
    if option is None:
        return root, f"`{command.name} {install.verb}`"
    value, known = expand_shell(argv[argv.index(option) + 1], env)
    return (value if known else None), f"`{command.name} {install.verb}`"


def _cleans(run: Run, pkgs: str) -> bool:
    """Whether `run` empties a conda pkgs/ directory: `conda clean --all/--tarballs`, or an rm
    of it or of a directory holding it."""
    return any(
        c.name in ("conda", "mamba", "micromamba") and "clean" in c.argv for c in run.commands
    ) or removes(run, paths=(pkgs,))


def conda_installer(command: Command) -> str | None:
    """The distribution a `bash Miniconda3-...sh -b -p /opt/conda` installs, if it is one."""
    words = command.words
    candidates = [words[0].text] if words else []
    if command.name in SHELLS:
        candidates = [w.text for w in words[1:] if not w.text.startswith("-")][:1]
    for text in candidates:
        match = _CONDA_INSTALLER.search(text)
        if match is not None:
            return match.group(1).capitalize()
    return None


def left_caches(configured: CacheOff, run: Run) -> list[str]:
    """The cache directories the installs of `run` leave in its layer (for GSL701: deleting
    them in a later RUN does not shrink the image)."""
    found: list[str] = []
    for command in run.commands:
        env = run.env_at(command)
        install = run.python_install(command)
        if install is None:
            if (
                command.name in ("apt-get", "apt")
                and "update" in command.argv
                and not run.has_mount_on("/var/lib/apt")
                and not removes(run, paths=("/var/lib/apt/lists",), after=command)
            ):
                found.append("/var/lib/apt/lists")
            continue
        if install.tool == "pip" and not _pip_clean(configured, run, command, env, install.options):
            found.append(user_cache(env, "pip", "PIP_CACHE_DIR"))
        elif install.tool == "uv" and not _uv_clean(run, command, env, install.options):
            found.append(user_cache(env, "uv", "UV_CACHE_DIR"))
        elif install.tool == "poetry" and not _poetry_clean(run, command, env, install):
            found.append(poetry_cache_dir(env))
    return found


def _pip_clean(
    configured: CacheOff,
    run: Run,
    command: Command,
    env: Env,
    options: frozenset[str],
) -> bool:
    if "--no-cache-dir" in options or pip_boolean(env.get("PIP_NO_CACHE_DIR")):
        return True
    if _configured_before(configured, run, command):
        return True
    cache_dir = user_cache(env, "pip", "PIP_CACHE_DIR")
    if _cache_mounted(run, env, "pip", cache_dir):
        return True
    return _cleaned_after(run, command, "pip cache purge") or removes(
        run, paths=(cache_dir,), after=command
    )


def _cache_mounted(run: Run, env: Env, tool: str, cache_dir: str) -> bool:
    """A cache/tmpfs mount on the tool's cache or on the whole ~/.cache."""
    caches = (home(env) + "/.cache", "/root/.cache", "~/.cache")
    return run.has_mount_on(f".cache/{tool}", cache_dir) or any(
        m.type in ("cache", "tmpfs") and m.target.rstrip("/") in caches for m in run.mounts
    )


@dataclass(frozen=True)
class CacheOff:
    """Where `pip config set global.no-cache-dir true` keeps pip's cache off: pip's config file
    holds it for every later pip of the stage and of the stages built on it."""

    first: dict[int, int]  # stage index -> the first RUN setting it, there or up its chain
    after: frozenset[int]  # id() of each command after one setting it in the same RUN


def pip_cache_configured_off(analysis: Analysis) -> CacheOff:
    """Where the file turns pip's cache off in its config. Computed once per file
    (`Analysis.per_file`)."""
    setting: list[Run] = []
    after: set[int] = set()
    for run in analysis.runs:
        seen = False
        for command in run.commands:
            if seen:
                after.add(id(command))
            elif _sets_no_cache(command):
                seen = True
                setting.append(run)
    return CacheOff(first_in_chains(analysis.stages, setting), frozenset(after))


def _sets_no_cache(command: Command) -> bool:
    argv = command.argv
    if not command.name.startswith("pip") or "config" not in argv or "set" not in argv:
        return False
    values = argv[argv.index("set") + 1 :]
    return (
        len(values) >= 2
        and values[0].split(".", 1)[-1] == "no-cache-dir"
        and pip_boolean(values[1])
    )


# pip reads PIP_NO_CACHE_DIR, and `no-cache-dir` in its config, through the --no-cache-dir
# option's callback, which turns the cache off for every value strtobool accepts: "0", "false",
# "no" and "off" too, for backwards compatibility (`_handle_no_cache_dir` in
# pip/_internal/cli/cmdoptions.py; checked with pip 23.2: `PIP_NO_CACHE_DIR=0 pip cache dir`
# says the cache is disabled). An empty value is ignored; any other value fails every pip run.
_PIP_BOOLEANS = frozenset({"y", "yes", "t", "true", "on", "1", "n", "no", "f", "false", "off", "0"})


def pip_boolean(value: str | None) -> bool:
    """Whether pip takes `value` as set for a switch such as no-cache-dir."""
    return value is not None and value.lower() in _PIP_BOOLEANS


def _configured_before(configured: CacheOff, run: Run, command: Command) -> bool:
    """A `pip config set ... no-cache-dir` earlier in this RUN, or in an earlier RUN of the
    stage chain."""
    first = configured.first.get(run.stage.index)
    return id(command) in configured.after or (first is not None and first < run.instruction.index)


def _uv_clean(run: Run, command: Command, env: Env, options: frozenset[str]) -> bool:
    # `--no-cache-dir` is uv's documented alias of `--no-cache` (uv-cache CacheArgs).
    if {"--no-cache", "--no-cache-dir", "-n"} & options or truthy(env.get("UV_NO_CACHE")):
        return True
    cache_dir = user_cache(env, "uv", "UV_CACHE_DIR")
    if _cache_mounted(run, env, "uv", cache_dir):
        return True
    return _cleaned_after(run, command, "uv cache clean") or removes(
        run, paths=(cache_dir,), after=command
    )


def poetry_cache_dir(env: Env) -> str:
    """Where poetry caches (POETRY_CACHE_DIR, default ~/.cache/pypoetry)."""
    return user_cache(env, "pypoetry", "POETRY_CACHE_DIR")


def _poetry_clean(run: Run, command: Command, env: Env, install: PythonInstall) -> bool:
    # `--only-root` installs the project itself from its source, its dependencies already
    # installed: nothing is downloaded into the cache.
    if {"--no-cache", "--only-root"} & install.options:
        return True
    cache_dir = poetry_cache_dir(env)
    if _cache_mounted(run, env, "pypoetry", cache_dir):
        return True
    return _cleaned_after(run, command, "poetry cache clear") or removes(
        run, paths=(cache_dir,), after=command
    )


def _conda_clean(run: Run, command: Command) -> bool:
    if run.has_mount_on("pkgs", "/opt/conda/pkgs"):
        return True
    return _cleaned_after(run, command, "conda clean") or _cleaned_after(run, None, "rm pkgs")


def _cleaned_after(run: Run, command: Command | None, *cleanups: str) -> bool:
    """Whether one of `cleanups` (see `_cleanups_of`) runs after `command` in the RUN; for no
    command, a command in a script the RUN runs, or one not in the RUN: anywhere in it (the
    order of the RUN's scripts against each other is unknown)."""
    places, last = run.per_run(_cleanups)
    start = places.get(id(command), -1) if command is not None and command.file is None else -1
    return any(last.get(cleanup, -1) > start for cleanup in cleanups)


def _cleanups(run: Run) -> tuple[dict[int, int], dict[str, int]]:
    """Each command's first place in the RUN (by id), and the last place of each cleanup:
    one pass, so that asking after each of thousands of installs reads the RUN once."""
    places: dict[int, int] = {}
    last: dict[str, int] = {}
    for place, command in enumerate(run.commands):
        places.setdefault(id(command), place)
        for cleanup in _cleanups_of(command):
            last[cleanup] = place
    return places, last


def _cleanups_of(command: Command) -> Iterator[str]:
    """The caches `command` cleans, as the names `_cleaned_after` asks for."""
    name, argv = command.name, command.argv
    if name.startswith("pip") and "cache" in argv and "purge" in argv:
        yield "pip cache purge"
    if name == "uv" and "cache" in argv and ("clean" in argv or "prune" in argv):
        yield "uv cache clean"
    if name == "poetry" and "cache" in argv and "clear" in argv:
        yield "poetry cache clear"
    if name in ("conda", "mamba", "micromamba") and "clean" in argv:
        flags = [a for a in argv if a.startswith("-")]
        if any(
            f in ("--all", "--tarballs") or (not f.startswith("--") and ("a" in f or "t" in f))
            for f in flags
        ):
            yield "conda clean"
    if name == "rm" and any("pkgs" in w.text for w in command.words):
        yield "rm pkgs"
    if name in ("apt-get", "apt") and ("dist-clean" in argv or "distclean" in argv):
        yield "apt dist-clean"
    if "clean" in argv:
        yield f"{name} clean"


def _os_caches(run: Run, command: Command) -> Iterator[Hit]:
    argv = command.argv
    name = command.name
    if name in ("apt-get", "apt", "aptitude") and "update" in argv:
        if run.has_mount_on("/var/lib/apt"):
            return
        if removes(run, paths=("/var/lib/apt/lists",), after=command):
            return
        if _cleaned_after(run, command, "apt dist-clean"):
            return
        word = command.words[argv.index("update")]
        yield at_word(
            "GSL304",
            f"`{name} update` lists stay in the image (no "
            "`rm -rf /var/lib/apt/lists/*` in this RUN)",
            run,
            command,
            word,
        )
    elif name == "apk" and "add" in argv and "--no-cache" not in argv:
        if run.has_mount_on("/var/cache/apk") or removes(
            run, paths=("/var/cache/apk",), after=command
        ):
            return
        yield at_word(
            "GSL305",
            "`apk add` without --no-cache keeps the package index",
            run,
            command,
            command.words[0],
        )
    else:
        yield from _rpm_cache(run, command)


# Where each manager keeps its cache. dnf 4: /var/cache/dnf (libdnf's SYSTEM_CACHEDIR); dnf 5:
# /var/cache/libdnf5 (dnf5's "changes from dnf4": the default system_cachedir), the `dnf` of
# Fedora 41 and later; microdnf: /var/cache/yum (CACHEDIR in its dnf-main.c), rebuilt on libdnf5
# from Fedora 38 on (dnf5's "Migrating from DNF to DNF5"); yum 3: /var/cache/yum (EL7), a link to
# dnf from EL8 on; tdnf: /var/cache/tdnf. Which one a command is depends on the distribution:
# a removal of any of its possible caches counts.
_RPM_CACHES = {
    "dnf": ("/var/cache/dnf", "/var/cache/libdnf5"),
    "dnf5": ("/var/cache/libdnf5",),
    "yum": ("/var/cache/yum", "/var/cache/dnf", "/var/cache/libdnf5"),
    "microdnf": ("/var/cache/yum", "/var/cache/libdnf5"),
    "tdnf": ("/var/cache/tdnf",),
}
# Whose `clean` may empty that cache: the dnf family shares one where the distribution makes them
# one stack (yum a link to dnf, microdnf on libdnf5), so any of them counts; tdnf only its own.
_DNF_STACK = frozenset({"dnf", "dnf5", "yum", "microdnf"})


def _rpm_cache(run: Run, command: Command) -> Iterator[Hit]:
    """GSL305 for a dnf/yum/microdnf/tdnf command that downloads packages (`install`, `in`,
    `upgrade`, `group install`...) with no clean or cache removal after it in the RUN."""
    verb = os_download(command)
    if verb is None:
        return
    name = command.name
    caches = _RPM_CACHES[name]
    if run.has_mount_on(*caches):
        return
    cleaners = _DNF_STACK if name in _DNF_STACK else frozenset({name})
    if _cleaned_after(run, command, *(f"{cleaner} clean" for cleaner in cleaners)):
        return
    if removes(run, paths=caches, after=command):
        return
    yield at_word(
        "GSL305",
        f"`{name} {verb.text}` without `{name} clean all` keeps the package cache "
        f"({' or '.join(caches)})",
        run,
        command,
        command.words[0],
    )
