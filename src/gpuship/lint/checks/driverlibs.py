"""GSL512: the NVIDIA driver's user-space libraries installed into the image, by an OS package
or by NVIDIA's `.run` installer. Which packages and installers do so is `gpuship.cuda.driverlibs`
(sourced); here is only where a Dockerfile runs them."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Iterator, Sequence

from gpuship.cuda import driverlibs
from gpuship.lint.analysis import Analysis, Run
from gpuship.lint.checks.base import Hit, at_word, image_runs
from gpuship.lint.packages import os_install, os_package_name
from gpuship.lint.shell import Command, Word
from gpuship.lint.stages import expand

RULE = "GSL512"
_SHELLS = frozenset({"sh", "bash", "dash", "ash", "ksh", "zsh"})
_UNRESOLVED = re.compile(r"\$\{[^}]*\}|\$\w+")
_REMOVALS = {
    "apt-get": ("remove", "purge", "autoremove"),
    "apt": ("remove", "purge", "autoremove"),
    "aptitude": ("remove", "purge"),
    "dnf": ("remove", "erase"),
    "yum": ("remove", "erase"),
    "microdnf": ("remove",),
}
_EFFECT = (
    "these belong to the host, whose driver's copies the NVIDIA Container Toolkit injects at "
    "run time; baked in, they meet a host with another driver as 'Driver/library version "
    "mismatch' (CUDA error 803) or a container that does not start"
)


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL512 for every RUN whose layers the image ships."""
    runs = list(image_runs(analysis))
    for index, run in enumerate(runs):
        for command in run.commands:
            for word, name, found in _driver_packages(run, command):
                if not _removed(name, _after(runs, index, command)):
                    text = expand(word.text, run.env_at(command))[0]
                    message = (
                        f"{text} installs the NVIDIA driver's user-space libraries "
                        f"({found.brings}): {_EFFECT}"
                    )
                    yield at_word(RULE, message, run, command, word)
            yield from _installer(run, command)


def _driver_packages(
    run: Run, command: Command
) -> Iterator[tuple[Word, str, driverlibs.DriverPackage]]:
    """Each driver package an apt or dnf/yum install names, with its name."""
    install = os_install(command)
    if install is None:
        return
    env = run.env_at(command)
    for word in install.packages:
        value, complete = expand(word.text, env)
        name = os_package_name(install.manager, value).split(":", 1)[0]
        # A branch the build passes (`libnvidia-compute-${BRANCH}`): any branch is a driver's.
        found = driverlibs.driver_package(name if complete else _UNRESOLVED.sub("000", name))
        if found is not None:
            yield word, name, found


def _after(runs: Sequence[Run], index: int, command: Command) -> Iterator[Command]:
    """The commands the image's build runs after `command` (of `runs[index]`)."""
    started = False
    for run in runs[index:]:
        for other in run.commands:
            if started:
                yield other
            started = started or other is command


def _removed(name: str, later: Iterable[Command]) -> bool:
    """True when a later apt/dnf remove or purge names the package (or a glob of it)."""
    for command in later:
        verbs = _REMOVALS.get(command.name)
        if verbs is None or not any(w.text in verbs for w in command.words[1:]):
            continue
        if any(fnmatch.fnmatchcase(name, w.text) for w in command.words[1:]):
            return True
    return False


def _installer(run: Run, command: Command) -> Iterator[Hit]:
    """NVIDIA's driver installer, or the CUDA runfile with `--driver`, run by the RUN."""
    words = list(command.words)
    if command.name in _SHELLS:
        words = words[1:]
        while words and words[0].text.startswith("-"):
            words = words[1:]
    if not words:
        return
    env = run.env_at(command)
    program = posixpath.basename(expand(words[0].text, env)[0])
    options = {w.text.split("=", 1)[0] for w in words[1:]}
    if driverlibs.DRIVER_INSTALLER.match(program):
        if options & driverlibs.INSTALLER_NO_INSTALL:
            return
        yield _installer_hit(run, command, words[0], f"{program} (NVIDIA's driver installer)")
    elif driverlibs.CUDA_RUNFILE.match(program) and driverlibs.CUDA_RUNFILE_DRIVER in options:
        yield _installer_hit(run, command, words[0], f"{program} --driver")


def _installer_hit(run: Run, command: Command, word: Word, what: str) -> Hit:
    return at_word(
        RULE,
        f"{what} installs the NVIDIA driver's user-space libraries (libcuda.so, "
        "libnvidia-ml.so, ...): " + _EFFECT,
        run,
        command,
        word,
    )
