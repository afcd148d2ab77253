"""Install the locked wheels from the (untrusted) cache into a fresh, private venv.

Usage: VENV_PYTHON -I install.py LOCK WHEELS SRC

The cache directory WHEELS may have been written by anyone who can write the runner's tool
cache or an actions/cache entry (README.md, threat model), so nothing in it is trusted: every
file must be a `.whl` whose bytes hash to a sha256 pinned in LOCK (read once into memory, so
what is hashed is what is unpacked), at most one per locked project, one for every project the
lock pins without a marker. Only then are the wheels unpacked, as pip unpacks them, into the
running interpreter's purelib (the fresh venv), plus a .pth naming SRC (gpuship's own code, in
the action's checkout). Nothing from the cache runs: no interpreter, script, .pth or bytecode
of it is ever on a path Python reads before its bytes were matched against the lock.

Standard library only (it runs before any dependency exists), Python 3.10+.
Exit 0: installed; 1: the cache does not match the lock (one line on stdout saying why;
setup.sh then downloads the wheels afresh); 2: a usage error.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import sys
import sysconfig
import zipfile
from pathlib import PurePosixPath

# A pinned requirement line (`name==version [; marker] \`) and its `--hash=sha256:...` lines.
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==\S+(?P<marker>\s*;[^\\]*)?")
_HASH = re.compile(r"--hash=sha256:(?P<digest>[0-9a-f]{64})")
# Far above the largest locked wheel (a few MB): a bound on what one file may make us read.
_MAX_WHEEL_BYTES = 256 * 1024 * 1024


class Mismatch(Exception):
    """The cached wheels are not exactly what the lock pins."""


def read_lock(path: str) -> tuple[dict[str, str], set[str]]:
    """The lock's sha256 digests (each naming its project) and the projects it always needs."""
    digests: dict[str, str] = {}
    required: set[str] = set()
    project = ""
    with open(path, encoding="utf-8") as lock:
        for line in lock:
            pin = _PIN.match(line)
            if pin:
                project = re.sub(r"[-_.]+", "-", pin["name"]).lower()
                if not pin["marker"]:
                    required.add(project)
            for found in _HASH.finditer(line):
                digests[found["digest"]] = project
    return digests, required


def read_wheel(directory: str, name: str) -> bytes:
    """The bytes of one cached file, refusing anything but a bounded regular file."""
    if not name.endswith(".whl"):
        raise Mismatch(f"{name} is not a wheel")
    try:
        fd = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise Mismatch(f"{name}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as wheel:
        status = os.fstat(wheel.fileno())
        if not stat.S_ISREG(status.st_mode) or status.st_size > _MAX_WHEEL_BYTES:
            raise Mismatch(f"{name} is not a regular file of at most {_MAX_WHEEL_BYTES} bytes")
        return wheel.read(_MAX_WHEEL_BYTES + 1)


def verified_wheels(lock: str, directory: str) -> list[bytes]:
    """Every cached wheel, each matched against the lock; Mismatch names the first problem."""
    digests, required = read_lock(lock)
    found: dict[str, bytes] = {}
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise Mismatch(f"cannot list {directory}: {exc.strerror}") from None
    for name in names:
        data = read_wheel(directory, name)
        project = digests.get(hashlib.sha256(data).hexdigest())
        if project is None:
            raise Mismatch(f"{name} matches no hash in the lock")
        if project in found:
            raise Mismatch(f"{name}: a second wheel of {project}")
        found[project] = data
    missing = sorted(required - found.keys())
    if missing:
        raise Mismatch(f"no wheel of {', '.join(missing)}")
    return list(found.values())


def destination(member: str) -> PurePosixPath | None:
    """Where a wheel member goes, relative to purelib (None: not needed to run), as pip
    places it: the wheel's root and its `.data/purelib|platlib` there, other `.data` not."""
    path = PurePosixPath(member)
    if path.is_absolute() or ".." in path.parts or "\\" in member:
        raise Mismatch(f"wheel member {member!r} leaves the install directory")
    if path.parts and path.parts[0].endswith(".data"):
        if len(path.parts) > 2 and path.parts[1] in ("purelib", "platlib"):
            return PurePosixPath(*path.parts[2:])
        return None
    return path


def unpack(data: bytes, site: str) -> None:
    """Write a verified wheel's members under site (new files only, links never followed)."""
    with zipfile.ZipFile(io.BytesIO(data)) as wheel:
        for info in wheel.infolist():
            target = None if info.is_dir() else destination(info.filename)
            if target is None:
                continue
            path = os.path.join(site, *target.parts)
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            mode = 0o755 if (info.external_attr >> 16) & 0o111 else 0o644
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            with os.fdopen(os.open(path, flags, mode), "wb") as out:
                out.write(wheel.read(info))


def main(argv: list[str]) -> int:
    if len(argv) != 4 or sys.prefix == sys.base_prefix or "\n" in argv[3]:
        print("usage: VENV_PYTHON -I install.py LOCK WHEELS SRC (run by a fresh venv's python)")
        return 2
    lock, directory, src = argv[1:]
    try:
        wheels = verified_wheels(lock, directory)
    except Mismatch as exc:
        print(f"the cached wheels in {directory} do not match {os.path.basename(lock)}: {exc}")
        return 1
    site = sysconfig.get_path("purelib")
    for data in wheels:
        unpack(data, site)
    # gpuship itself runs from the action's checkout; a .pth line that is a path only.
    with open(os.path.join(site, "gpuship-checkout.pth"), "x", encoding="utf-8") as pth:
        pth.write(os.path.abspath(src) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
