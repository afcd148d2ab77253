"""Writing the files gpuship is asked to write (reports, SARIF, the lock file, release
records, audits): whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

from gpuship.errors import InputError


def write_atomically(path: Path, text: str, what: str = "file") -> None:
    """Write `text` to `path` through a temp file in the same directory renamed into place,
    so a reader never sees half a file and a failed write leaves the old one (and no temp
    file). An OSError is an InputError naming the file and `what` it is."""
    import tempfile  # only when a file is written: a start-up cost for every command otherwise

    directory = path.parent if str(path.parent) else Path(".")
    temporary: str | None = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        raise InputError(f"{path}: cannot write {what}: {exc.strerror or exc}") from None
    finally:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
