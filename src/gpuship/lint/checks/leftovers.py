"""GSL702: files a RUN downloads to install from (wheels, .deb/.rpm packages, CUDA .run and
conda installers, source archives) and leaves in the final image's layer.

Where the file lands is read the way curl and wget name it: `-o/-O PATH`, `-P DIR`, `curl -O`
and wget's default (the URL's last segment) in the working directory, which `cd` moves. A later
`rm` (or `find -delete`; a relative path is read from the directory it runs in) in the same
RUN that may reach it, a mount on its directory, or any path left unknown (an unexpanded
variable, a `cd` to one) means the file is not reported.
"""

from __future__ import annotations

import bisect
import fnmatch
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from gpuship.lint.analysis import Analysis, Run
from gpuship.lint.checks.base import Hit, at_word, home_path, image_runs
from gpuship.lint.shell import Command, Word, expand_shell
from gpuship.lint.stages import Env

# Files downloaded only to be installed or unpacked, and large enough to matter.
_INSTALL_INPUTS = re.compile(
    r"(?i)(\.whl|\.deb|\.rpm|\.run|\.tar\.gz|\.tgz|\.tar\.xz|\.txz|\.tar\.bz2|\.tar\.zst|\.zip"
    r"|(?:miniconda|miniforge|mambaforge|anaconda)[\w.\-]*\.sh)$"
)
# A URL curl or wget fetches (this module reads their command lines for every check).
URL = re.compile(r"^https?://", re.IGNORECASE)
# curl short options that take a value (`-fsSLo out`: what follows `o` is its value).
_CURL_VALUE_LETTERS = frozenset("oXHduAebcmTwxyYzCEKrtUFQP")
_DELETERS = frozenset({"rm", "find", "unlink", "shred"})


@dataclass(frozen=True)
class Saved:
    """A downloaded file: its URL word and where it lands (None: the directory is unknown)."""

    word: Word
    name: str
    directory: str | None


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL702 for each install input downloaded in a final-image RUN and not deleted there."""
    for run in image_runs(analysis):
        commands = list(run.commands)
        cwds = working_dirs(run, commands)
        # The RUN's deletions (and where they are): a download looks only at those after it,
        # not at every later command (a RUN of thousands of downloads).
        deletions = [(i, c) for i, c in enumerate(commands) if c.name in _DELETERS | {"mv"}]
        for index, command in enumerate(commands):
            if command.file is not None or command.name in ("cd", "pushd"):
                continue
            for saved in _saved(command, run, cwds[index]):
                later = deletions[bisect.bisect_right(deletions, index, key=lambda d: d[0]) :]
                if _kept(run, saved, [(c, cwds[i]) for i, c in later]):
                    shown = posixpath.join(saved.directory or "", saved.name)
                    yield at_word(
                        "GSL702",
                        f"`{command.name}` downloads {shown} and the RUN leaves it in "
                        "the layer: the image carries the file as well as what came from it",
                        run,
                        command,
                        saved.word,
                    )


def working_dirs(run: Run, commands: list[Command]) -> list[str | None]:
    """The working directory each command runs in: WORKDIR, moved by `cd`/`pushd`; None where
    unknown (a script's own `cd`s are not followed: its paths are unknown)."""
    cwd: str | None = run.state.workdir
    found: list[str | None] = []
    for command in commands:
        found.append(None if command.file is not None else cwd)
        if command.file is None and command.name in ("cd", "pushd"):
            cwd = _moved(cwd, command, run)
    return found


def _moved(cwd: str | None, command: Command, run: Run) -> str | None:
    target = next((w.text for w in command.words[1:] if not w.text.startswith("-")), "~")
    value, known = expand_shell(target, run.env_at(command))
    if not known or cwd is None:
        return None
    return posixpath.normpath(posixpath.join(cwd, home_path(value, run.env_at(command))))


def _saved(command: Command, run: Run, cwd: str | None) -> Iterator[Saved]:
    """Install inputs `command` writes to a file."""
    if command.name not in ("curl", "wget"):
        return
    env = run.env_at(command)
    words = command.words[1:]
    urls = [w for w in words if URL.match(expand_shell(w.text, env)[0])]
    if not urls:
        return
    output, directory = _output(command)
    for word in urls:
        url = expand_shell(word.text, env)[0].split("?", 1)[0].split("#", 1)[0]
        target = output
        if target is None:
            if command.name == "curl" and not _curl_remote_name(words):
                continue  # to stdout (a pipe or a redirect is not an install input file)
            target = url.rstrip("/").rsplit("/", 1)[-1]
        if target in ("-", "/dev/null"):
            continue
        value, known = expand_shell(target, env)
        if not known or not _INSTALL_INPUTS.search(value):
            continue
        base = cwd
        if directory is not None:
            folder, folder_known = expand_shell(directory, env)
            base = posixpath.join(cwd, folder) if folder_known and cwd else None
        path = home_path(value, env)
        if path.startswith("/"):
            yield Saved(word, posixpath.basename(path), posixpath.dirname(path))
        else:
            full = posixpath.normpath(posixpath.join(base, path)) if base else None
            name = posixpath.basename(path)
            yield Saved(word, name, posixpath.dirname(full) if full else None)


def output_path(command: Command) -> str | None:
    """The file a curl/wget command writes (as written, maybe relative), or None for stdout."""
    output, directory = _output(command)
    if output is None:
        url = next((w.text for w in command.words[1:] if URL.match(w.text)), None)
        if url is None or (command.name == "curl" and not _curl_remote_name(command.words[1:])):
            return None
        output = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    return posixpath.join(directory, output) if directory else output


def _output(command: Command) -> tuple[str | None, str | None]:
    """(`-o/-O FILE`, `-P DIR` / `--output-dir DIR`) of a curl or wget command."""
    words = [w.text for w in command.words[1:]]
    file_options = ("-O", "--output-document") if command.name == "wget" else ("-o", "--output")
    dir_options = ("-P", "--directory-prefix") if command.name == "wget" else ("--output-dir",)
    output = directory = None
    for index, text in enumerate(words):
        option, has_value, value = text.partition("=")
        following = words[index + 1] if index + 1 < len(words) else None
        if option in file_options:
            output = value if has_value else following
        elif option in dir_options:
            directory = value if has_value else following
        elif command.name == "curl" and (attached := curl_short(text, "o")) is not None:
            output = attached or following
        elif command.name == "wget" and text.startswith("-O") and len(text) > 2:
            output = text[2:]
    return output, directory


def curl_short(text: str, letter: str) -> str | None:
    """Whether a bundle of curl short options (`-fsSLo`, `-kL`) sets `letter`: None when it
    does not, else what follows the letter in the word (an option's attached value, `-oout`;
    "" when its value is the next word). Options after one that takes a value are its value."""
    if not text.startswith("-") or text.startswith("--"):
        return None
    for index, char in enumerate(text[1:], start=2):
        if char == letter:
            return text[index:]
        if char in _CURL_VALUE_LETTERS:
            return None
    return None


def _curl_remote_name(words: tuple[Word, ...]) -> bool:
    """curl `-O`/`--remote-name` (also in a bundle such as `-fsSLO`): the URL's file name."""
    return any(
        w.text in ("--remote-name", "--remote-name-all") or curl_short(w.text, "O") is not None
        for w in words
    )


def _kept(run: Run, saved: Saved, later: list[tuple[Command, str | None]]) -> bool:
    """True unless a mount holds its directory or a later rm/find (with the directory it runs
    in) may delete it, where it is then: a later `mv` moves it (`mv x.sh /tmp/i.sh`, or into a
    directory of that name: both places are followed)."""
    if saved.directory is not None and run.has_mount_on(
        saved.directory, kinds=("cache", "tmpfs", "bind")
    ):
        return False
    places = [saved]
    for command, cwd in later:
        env = run.env_at(command)
        paths = _operands(command, env, cwd)
        if paths is None:
            return False  # a path decided at build time may be the file
        if command.name == "mv":
            places = _moved_to(places, paths, command)
            if not places:
                return False
        elif any(_may_delete(path, place) for path in paths for place in places):
            return False
    return True


def _operands(command: Command, env: Env, cwd: str | None) -> list[str] | None:
    """The paths an rm/find/unlink/shred/mv command names, absolute where the directory it runs
    in is known; None when one is decided at build time."""
    paths = []
    for word in command.words[1:]:
        if word.text.startswith("-"):
            if command.name == "find":
                break  # the expression: what follows is not a path
            continue
        value, known = expand_shell(word.text, env)
        if not known or "$" in value:
            return None
        path = home_path(value, env)
        if not path.startswith("/") and cwd is not None:  # `find . -name '*.whl' -delete`
            path = posixpath.normpath(posixpath.join(cwd, path))
        paths.append(path)
    return paths


def _moved_to(places: list[Saved], paths: list[str], command: Command) -> list[Saved]:
    """Where the file may be after `mv SOURCE... DEST`: unchanged unless a source may be it;
    else DEST itself and DEST/NAME (whether DEST is a directory is not known). Empty when the
    destination is not an absolute path."""
    if len(paths) < 2 or not any(_may_delete(p, place) for p in paths[:-1] for place in places):
        return places
    target = paths[-1]
    if not target.startswith("/") or any(w.text.startswith("-t") for w in command.words[1:]):
        return []
    word = places[0].word
    name = places[0].name
    moved = [Saved(word, name, target.rstrip("/") or "/")]
    if not target.endswith("/"):
        moved.append(Saved(word, posixpath.basename(target), posixpath.dirname(target)))
    return moved


def _may_delete(path: str, saved: Saved) -> bool:
    """Whether deleting `path` (a file, a directory, a glob) may delete the saved file."""
    pattern = posixpath.basename(path.rstrip("/"))
    if not path.startswith("/") or saved.directory is None:
        # Relative to a directory not tracked here: the name alone decides, and a bare
        # directory name may be the one holding the file.
        return fnmatch.fnmatchcase(saved.name, pattern) or (
            saved.directory is None and not any(c in path for c in "*?[")
        )
    folder = posixpath.dirname(path.rstrip("/"))
    if folder == saved.directory and fnmatch.fnmatchcase(saved.name, pattern):
        return True
    prefix = path.rstrip("/")
    return not any(c in prefix for c in "*?[") and (saved.directory + "/").startswith(prefix + "/")
