"""Writing the files gpuship is asked to write (reports, SARIF, the lock file, release
records, audits): whole or not at all."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gpuship.errors import InputError


def write_atomically(path: Path, text: str, what: str = "file") -> None:
    """Write `text` to `path` through a temp file in the same directory renamed into place,
    so a reader never sees half a file and a failed write leaves the old one (and no temp
    file). An OSError is an InputError naming the file and `what` it is.

    A symbolic link on the way is refused (InputError, exit 2): a checkout can hold one, so a
    pull request could point `gpuship.sarif` (or a directory above it, within the working
    directory) at any file the job may write. Stream names under /dev and /proc
    (`/dev/stdout`, `/dev/fd/1`) are links the user wrote on purpose, and a target that exists
    but is not a regular file (those, `/dev/null`, a FIFO) is written to in place: renaming
    over it would replace the device or pipe with a plain file."""
    link = _planted_link(Path(os.path.abspath(path)))
    if link is not None:
        raise InputError(
            f"{path}: refusing to write {what} through the symbolic link {link} (to "
            f"{os.readlink(link)}): a checkout may plant one to overwrite another file; remove "
            "it or write elsewhere"
        )
    try:
        existing = _stat_or_none(path)
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            _write_in_place(path, text)
            return
        _replace(Path(os.path.realpath(path)), text, existing)
    except OSError as exc:
        raise InputError(f"{path}: cannot write {what}: {exc.strerror or exc}") from None


def _planted_link(path: Path) -> Path | None:
    """The symbolic link `path` goes through, if any: `path` itself (bar /dev and /proc), or a
    directory between the working directory and it (links above it are the machine's own,
    such as macOS's /tmp)."""
    if path.is_symlink() and not path.is_relative_to("/dev") and not path.is_relative_to("/proc"):
        return path
    cwd = Path(os.getcwd())
    if path.is_relative_to(cwd):
        for parent in reversed(path.parents):
            if parent.is_relative_to(cwd) and parent != cwd and parent.is_symlink():
                return parent
    return None


def _stat_or_none(path: Path) -> os.stat_result | None:
    """The target's status (through a symlink), None when there is none yet: one stat, where
    exists() and then stat() were two and could disagree."""
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def _write_in_place(path: Path, text: str) -> None:
    """Write to a device or pipe. Opened non-blocking so a FIFO nobody reads is an error
    (ENXIO) instead of a wait that never ends; then blocking again for the write itself."""
    handle = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    os.set_blocking(handle, True)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)


def _replace(target: Path, text: str, existing: os.stat_result | None) -> None:
    import secrets  # only when a file is written: a start-up cost for every command otherwise

    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}")
    # 0666 less the umask, as open(path, "w") would create it (mkstemp's 0600 would hide a
    # report from the CI user reading it); a file that existed keeps its permissions.
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            if existing is not None:
                os.fchmod(stream.fileno(), stat.S_IMODE(existing.st_mode))
            stream.write(text)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
