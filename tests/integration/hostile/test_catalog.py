"""The hostile-input catalog of issue 19: every case through the real `gpuship` command.

Each case runs `gpuship ...` as a child process and must end with exit 0-3, no traceback,
within the time bound and under 300 MB of peak RSS (GNU time's measure of that process).
The time bound is a correctness bound, not a benchmark: the CPU time the command used must
stay under 10 s; wall time is only a guard against a hang (a blocked read uses no CPU), kept
loose because a shared CI runner's wall clock also measures its neighbours.

Registry cases (redirects, slow or endless bodies, deadlines) are the registry client's and
are tested with it; so are the Dockerfile parser's own size and line-continuation bounds.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bed import hostile

pytestmark = pytest.mark.integration

CPU_SECONDS = 10.0
WALL_GUARD_SECONDS = 60.0
# The kernel stops a run at twice the bound (SIGXCPU): a case that comes to pass it fails in
# seconds instead of spinning until the wall guard, and a near miss still reports the CPU it
# took.
CPU_KILL_SECONDS = int(2 * CPU_SECONDS)
MAX_RSS_BYTES = 300 * 1024 * 1024
GPUSHIP = str(Path(sys.executable).with_name("gpuship"))
TIME = "/usr/bin/time"  # GNU time, installed by scripts/install-test-deps
AUDIT = Path(__file__).resolve().parents[2] / "data" / "gpu-readings"
DIGITS = "1" * 100_000


@dataclass(frozen=True)
class Case:
    """One hostile input: how to make it, the command line, what must come out."""

    make: Callable[[Path], list[str]]  # builds the input under the dir, returns gpuship args
    exit_code: int
    says: str  # a fragment of stderr (an error) or stdout (a finding)
    never_says: str = ""  # a fragment that must be in neither (text read where it must not be)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _config(text: str) -> Callable[[Path], list[str]]:
    def make(root: Path) -> list[str]:
        config = _write(root / "gpuship.yaml", text)
        _write(root / "ctx" / "Dockerfile", "FROM scratch\n")
        return ["--config", str(config), "lint", str(root / "ctx")]

    return make


def _lint(dockerfile: str, files: dict[str, str] | None = None) -> Callable[[Path], list[str]]:
    def make(root: Path) -> list[str]:
        _write(root / "Dockerfile", dockerfile)
        for name, text in (files or {}).items():
            _write(root / name, text)
        return ["lint", str(root)]

    return make


def _stages(count: int, stage: str, first: int = 1) -> str:
    """`count` stages from `stage`, formatted with its index `i` and the one before, `p`;
    stage 0 FROM an image when `first` is 1."""
    lines = ["FROM python:3.12 AS s0\n"] if first else []
    lines += [stage.format(i=i, p=i - 1) for i in range(first, count)]
    return "".join(lines)


def _big_script(root: Path) -> list[str]:
    _write(root / "Dockerfile", "FROM python:3.12\nCOPY script.sh /\nRUN ./script.sh\n")
    hostile.huge_file(root / "script.sh", 100 << 20, b"pip install torch numpy && echo ok\n")
    return ["lint", str(root)]


def _layout(build: Callable[[Path], Path]) -> Callable[[Path], list[str]]:
    def make(root: Path) -> list[str]:
        return ["inspect", f"oci:{build(root / 'layout')}"]

    return make


def _bomb(compression: str) -> Callable[[Path], Path]:
    media = hostile.OCI_LAYER_GZIP if compression == "gzip" else hostile.OCI_LAYER_ZSTD
    return lambda d: hostile.raw_layer_layout(
        d, hostile.zero_bomb(20, compression), diff_id="sha256:" + "0" * 64, media_type=media
    )


def _million(directory: Path) -> Path:
    blob, diff_id = hostile.many_files_tar_gzip(1_000_000)
    return hostile.raw_layer_layout(directory, blob, diff_id=diff_id)


def _media_type(layer: str = hostile.OCI_LAYER_GZIP, config: str = hostile.OCI_CONFIG):
    def build(directory: Path) -> Path:
        from bed.images import layer_tar
        from bed.oci import gzip_layer, sha256_digest

        tar = layer_tar({"app/x": b"x"})
        return hostile.raw_layer_layout(
            directory,
            gzip_layer(tar),
            diff_id=sha256_digest(tar),
            media_type=layer,
            config_media_type=config,
        )

    return build


def _declared_media_type(directory: Path) -> Path:
    layout, _ = hostile.plain_layout(directory)
    from bed.oci import OCI_MANIFEST, Blob, canonical_json

    odd = Blob(OCI_MANIFEST, b'{"schemaVersion": 2, "mediaType": "text/html", "config": {}}')
    hostile.blob_path(layout, odd.digest).write_bytes(odd.data)
    index = {"schemaVersion": 2, "manifests": [odd.descriptor()]}
    (layout / "index.json").write_bytes(canonical_json(index))
    return layout


def _archive_dir(root: Path) -> list[str]:
    (root / "saved").mkdir()
    return ["inspect", f"docker-archive:{root / 'saved'}"]


def _archive_deep(root: Path) -> list[str]:
    return ["inspect", f"docker-archive:{hostile.deep_docker_archive(root / 'a.tar')}"]


def _deep_audit(root: Path) -> list[str]:
    audit = root / "audit.json"
    audit.write_bytes(hostile.nested_json(100_000))
    return ["fleet", str(audit)]


def _deep_matrix_file(root: Path) -> list[str]:
    matrix = root / "matrix.json"
    matrix.write_bytes(hostile.nested_json(100_000))
    audit = next(AUDIT.glob("*.audit.json"))
    return ["fleet", str(audit), "--matrix", str(matrix)]


def _deep_include(root: Path) -> list[str]:
    config = _write(
        root / "gpuship.yaml",
        "images:\n  - name: a\n    repository: 127.0.0.1:5000/a\n    axes: {cuda: ['12.4']}\n",
    )
    nested = "[" * 50_000 + "]" * 50_000
    return ["--config", str(config), "matrix", "--include", nested]


def _wide_matrix(root: Path) -> list[str]:
    config = _write(root / "gpuship.yaml", hostile.wide_matrix_config())
    return ["--config", str(config), "matrix"]


def _fifo_dockerfile(root: Path) -> list[str]:
    _write(root / "app" / "Dockerfile", "FROM python:3.12\n")
    os.mkfifo(root / "app" / "Dockerfile.dev")
    return ["lint", str(root / "app")]


def _fifo_config(root: Path) -> list[str]:
    os.mkfifo(root / "gpuship.yaml")
    return ["--config", str(root / "gpuship.yaml"), "lint", str(root)]


def _ignore_at_the_limit(
    shape: Callable[[int], str], patterns: int = 10_000
) -> Callable[[Path], list[str]]:
    """A `.dockerignore` of `patterns` lines (dockerignore-max-patterns: 10,000) made by
    `shape` over a 3,000-file context that COPY sends whole (issue #36: minutes before the
    patterns were matched all at once)."""

    def make(root: Path) -> list[str]:
        _write(root / "Dockerfile", "FROM python:3.12\nCOPY . /app\n")
        for i in range(3_000):
            _write(root / f"src/d{i % 100}/s{i % 20}/f{i * 7 % 20_000}x{i % 9}.py", "x")
        _write(root / ".dockerignore", "\n".join(shape(i) for i in range(patterns)))
        return ["lint", str(root)]

    return make


def _ignore_linked_out(root: Path) -> list[str]:
    """A `.dockerignore` linked to a file outside the context whose line is an invalid
    pattern: it was quoted in a GSL004 finding (SARIF reaches code scanning)."""
    _write(root / "secret", "token[z-a]\n")
    _write(root / "ctx" / "Dockerfile", "FROM scratch\nCOPY . /\n")
    (root / "ctx" / ".dockerignore").symlink_to(root / "secret")
    return ["lint", str(root / "ctx")]


def _sarif_through_link(root: Path) -> list[str]:
    """`--sarif` at a name the checkout made a link to another file (the job's own files)."""
    _write(root / "precious", "keep\n")
    _write(root / "Dockerfile", "FROM scratch\n")
    (root / "gpuship.sarif").symlink_to(root / "precious")
    return ["lint", "--sarif", "gpuship.sarif", "Dockerfile"]


def _context_entries(entries: int) -> Callable[[Path], list[str]]:
    """A context of `entries` entries (context-max-entries: 200,000), directories of 1,000
    files, all sent by `COPY . /app`."""

    def make(root: Path) -> list[str]:
        _write(root / "Dockerfile", "FROM python:3.12\nCOPY . /app\n")
        directories = entries // 1_001
        for d in range(directories):
            (root / f"d{d}").mkdir()
            for f in range(1_000):
                (root / f"d{d}" / f"f{f}").touch()
        return ["lint", str(root)]

    return make


def _layer_entries(count: int) -> Callable[[Path], list[str]]:
    """An image whose one layer holds `count` files (layer-max-entries: 250,000)."""

    def build(directory: Path) -> Path:
        blob, diff_id = hostile.many_files_tar_gzip(count)
        return hostile.raw_layer_layout(directory, blob, diff_id=diff_id)

    return _layout(build)


def _matrix_cells(last_axis: int) -> Callable[[Path], list[str]]:
    """A matrix of 10 x 10 x 10 x `last_axis` cells (matrix-max-cells: 10,000)."""

    def make(root: Path) -> list[str]:
        axes = [10, 10, 10, last_axis]
        lines = ["images:", "  - name: wide", "    repository: 127.0.0.1:5000/acme/w", "    axes:"]
        lines += [
            f"      a{a}: [{', '.join(f'v{n}' for n in range(k))}]" for a, k in enumerate(axes)
        ]
        config = _write(root / "gpuship.yaml", "\n".join(lines) + "\n")
        return ["--config", str(config), "matrix"]

    return make


def _audit_json(text: Callable[[], str]) -> Callable[[Path], list[str]]:
    """`gpuship fleet` of a JSON document read whole (within the json-* limits), then
    refused as no audit: the parse at the limit is what is measured."""

    def make(root: Path) -> list[str]:
        return ["fleet", str(_write(root / "audit.json", text()))]

    return make


def _fraction(maximum: int, fraction: float) -> int:
    return max(1, int(maximum * fraction))


# Lint said nothing was left unchecked: a limit reached is a GSL003 warning, not an error.
CHECKED_WHOLE = "0 errors, 0 warnings"

# Each limit's input at a fraction of its maximum (1.0: at the limit, as the catalog runs it;
# bench/limits runs 0.5 and 1.0 to show the time grows in proportion). Limits met elsewhere
# in CATALOG at their maximum (stages, targets, context-file-max-bytes) are not repeated.
AT_THE_LIMIT: dict[str, Callable[[float], Case]] = {
    "dockerignore-max-patterns (typical)": lambda f: Case(
        _ignore_at_the_limit(
            lambda i: TYPICAL_IGNORE[i % len(TYPICAL_IGNORE)](i), _fraction(10_000, f)
        ),
        0,
        CHECKED_WHOLE,
    ),
    "dockerignore-max-patterns (wildcards)": lambda f: Case(
        _ignore_at_the_limit(lambda i: f"**/f{i}?x", _fraction(10_000, f)), 0, CHECKED_WHOLE
    ),
    # A wildcard first: one RE2 set of them cost 17 s (its DFA steps all 10,000 on every name).
    "dockerignore-max-patterns (leading wildcards)": lambda f: Case(
        _ignore_at_the_limit(lambda i: f"**/*f{i}?x", _fraction(10_000, f)), 0, CHECKED_WHOLE
    ),
    "context-max-entries": lambda f: Case(
        _context_entries(_fraction(199_000, f)), 0, CHECKED_WHOLE
    ),
    "run-max-commands": lambda f: Case(
        _lint("FROM python:3.12\nRUN " + " && ".join(["echo x"] * _fraction(5_000, f)) + "\n"),
        0,
        CHECKED_WHOLE,
    ),
    "script-max-bytes": lambda f: Case(
        _lint(
            "FROM python:3.12\nCOPY s.sh /\nRUN ./s.sh\n",
            # 4,990 commands of 52 bytes: under run-max-commands, so the bytes are what is met.
            {"s.sh": f"echo {'x' * 46}\n" * _fraction(4_990, f)},
        ),
        0,
        CHECKED_WHOLE,
    ),
    # Each pip install asks whether a later command deletes its cache (checks/cache.py
    # `_pip_clean`): the rm at the end makes each ask reach it, which was quadratic (every
    # later command read for each install) and is now one pass over the RUN (issue #37).
    "run-max-commands (pip)": lambda f: Case(
        _lint(
            "FROM python:3.12\nRUN "
            + " \\\n  && ".join(
                ["pip install x==1"] * (_fraction(5_000, f) - 1) + ["rm -rf /root/.cache/pip"]
            )
            + "\n"
        ),
        0,
        CHECKED_WHOLE,
    ),
    "yaml-max-bytes": lambda f: Case(
        _config("fail-on: error\n" + "# padding\n" * _fraction(419_000, f)), 0, CHECKED_WHOLE
    ),
    "yaml-max-nodes": lambda f: Case(
        _config(
            "registries:\n  insecure: ["
            + ", ".join(f"h{i}" for i in range(_fraction(199_000, f)))
            + "]\n"
        ),
        0,
        CHECKED_WHOLE,
    ),
    "layer-max-entries": lambda f: Case(_layer_entries(_fraction(249_000, f)), 0, ""),
    "matrix-max-cells": lambda f: Case(_matrix_cells(_fraction(10, f)), 0, "cells"),
    "json-max-items": lambda f: Case(
        _audit_json(lambda: "[" + ",".join(["1"] * _fraction(199_000, f)) + "]"),
        2,
        "not a gpuship audit",
    ),
    "json-max-bytes": lambda f: Case(
        _audit_json(lambda: '{"x": "' + "a" * _fraction((16 << 20) - 100, f) + '"}'),
        2,
        "not a gpuship audit",
    ),
    "json-max-depth": lambda f: Case(
        _audit_json(lambda: "[" * _fraction(63, f) + "]" * _fraction(63, f)),
        2,
        "not a gpuship audit",
    ),
}

TYPICAL_IGNORE = (
    lambda i: f"build{i}",
    lambda i: f"**/cache{i}",
    lambda i: f"*.e{i}",
    lambda i: f"src/d{i % 100}/**/*.t{i}",
    lambda i: f"!src/d{i % 100}/keep{i}",
    lambda i: f"docs/v{i}/**",
)


def _probe_requests(section: str, file: str | None) -> Callable[[Path], list[str]]:
    """`gpuship probe --url` with `probe.<section>.requests-file` a FIFO (None) or `file`; the
    file is refused before any request is sent, so nothing needs to listen at the URL."""

    def make(root: Path) -> list[str]:
        path = file
        if path is None:
            path = str(root / "requests.jsonl")
            os.mkfifo(path)
        config = _write(root / "gpuship.yaml", f"probe:\n  {section}:\n    requests-file: {path}\n")
        return ["--config", str(config), "probe", "candidate:1", "--url", "http://127.0.0.1:9"]

    return make


CATALOG: dict[str, Case] = {
    # JSON nested past the recursion limit, in every local JSON reader.
    "oci-index-deep": Case(
        _layout(lambda d: hostile.deep_json_layout(d, "index")), 2, "JSON nests deeper than 64"
    ),
    "oci-manifest-deep": Case(
        _layout(lambda d: hostile.deep_json_layout(d, "manifest")), 2, "nests deeper than 64"
    ),
    "oci-config-deep": Case(
        _layout(lambda d: hostile.deep_json_layout(d, "config")), 2, "image config: JSON nests"
    ),
    "docker-archive-manifest-deep": Case(_archive_deep, 2, "manifest.json: JSON nests deeper"),
    "fleet-audit-deep": Case(_deep_audit, 2, "audit file: JSON nests deeper than 64"),
    "fleet-matrix-deep": Case(_deep_matrix_file, 2, "matrix: JSON nests deeper than 64"),
    "matrix-include-deep": Case(_deep_include, 2, "--include: JSON nests deeper than 64"),
    # gpuship.yaml
    "config-deep": Case(_config(hostile.deep_yaml(200)), 2, "YAML nests deeper than 64 levels"),
    "config-alias-bomb": Case(_config(hostile.alias_bomb()), 2, "once its aliases are expanded"),
    "config-recursive-alias": Case(_config("a: &a [x, *a]\n"), 2, "a recursive structure"),
    "config-50mb": Case(
        _config("fail-on: error\n" + "# padding\n" * 5_000_000),
        2,
        "limit limits.yaml-max-bytes",
    ),
    "config-fifo": Case(_fifo_config, 2, "is not a regular file"),
    # Dockerfile and build context
    "dockerfile-fifo": Case(_fifo_dockerfile, 0, "1 Dockerfile(s)"),
    "dockerignore-invalid-range": Case(
        _lint("FROM scratch\nCOPY . /\n", {".dockerignore": "*.tmp\n[z-a]\n", "a": "x"}),
        1,
        "GSL004 invalid pattern '[z-a]'",
    ),
    "dockerignore-backtracking": Case(
        _lint(
            "FROM scratch\nCOPY . /\n",
            {".dockerignore": "\n".join(hostile.backtracking_globs()), "a" * 200: "x"},
        ),
        0,
        "0 errors",
    ),
    "dockerignore-linked-out": Case(
        _ignore_linked_out, 0, "symbolic link out of the build", never_says="token"
    ),
    "sarif-through-a-link": Case(
        _sarif_through_link, 2, "refusing to write report through the symbolic link"
    ),
    "arg-doubling": Case(_lint(hostile.doubling_dockerfile(40)), 0, "limits.expansion-max-bytes"),
    # Stage graphs: 10,000 stages (over the limit, refused at once), and the most the limit
    # lets through in each shape that was quadratic; 20,000 ARGs in one stage (a dict per
    # instruction held 200 million values).
    "stages-10k": Case(_lint(_stages(10_000, "FROM s{p} AS s{i}\n")), 0, "dockerfile-max-stages"),
    "stages-1k-from-chain": Case(
        _lint(_stages(1_000, "FROM s{p} AS s{i}\nENV V{i}={i}\n")), 0, "0 errors"
    ),
    "stages-1k-copy-chain": Case(
        _lint(_stages(1_000, "FROM scratch AS s{i}\nCOPY --from=s{p} /a /a\n")), 0, "0 errors"
    ),
    "stages-1k-targets": Case(
        _lint(_stages(1_000, "FROM python:3.12 AS s{i}\nARG V\nENV E{i}=$V\n")), 0, "0 errors"
    ),
    "stages-1k-scripts": Case(
        _lint(_stages(1_000, "FROM s{p} AS s{i}\nCOPY Dockerfile /d{i}\nRUN ./install-{i}.sh\n")),
        0,
        "0 errors",
    ),
    "stages-1k-one-chain-many-targets": Case(
        _lint(_stages(500, "FROM s{p} AS s{i}\n") + _stages(500, "FROM s499 AS t{i}\n", 0)),
        0,
        "limit limits.targets-max-instructions",
    ),
    "args-growing-20k": Case(
        _lint("FROM scratch\n" + "".join(f"ARG A{i}=${{A{i - 1}}}x\n" for i in range(20_000))),
        0,
        "limit limits.expansion-max-total-bytes",
    ),
    "args-20k": Case(
        _lint("FROM scratch\n" + "".join(f"ARG A{i}={i}\nRUN true\n" for i in range(20_000))),
        0,
        "0 errors",
    ),
    "script-100mb": Case(_big_script, 0, "limit limits.script-max-bytes"),
    # Build contexts that grow with the file (issue #26, from review): a Makefile just under
    # context-file-max-bytes behind 60 `make`s (parsed again for each: over 10 min), 600
    # COPYs of a 60,000-file context (every file scanned per COPY), 8,000 requirements files
    # each copied and installed (20 s of CPU), 12,000 COPYs then 12,000 deletions.
    "makefile-2mib-60-makes": Case(
        _lint(
            "FROM python:3.12\nCOPY Makefile /app/\nWORKDIR /app\n" + "RUN make t5\n" * 60,
            {"Makefile": "".join(f"t{i}: t{i + 1}\n\techo {i}\n" for i in range(75_000))},
        ),
        0,
        "0 errors",
    ),
    "context-60k-files-600-copies": Case(
        _lint(
            "FROM python:3.12\n" + "".join(f"COPY src/d{i} /opt/d{i}/\n" for i in range(600)),
            {f"src/d{i}/f{j}": "x" for i in range(600) for j in range(100)},
        ),
        0,
        "0 errors",
    ),
    "requirements-8k": Case(
        _lint(
            "FROM python:3.12\n"
            + "".join(
                f"COPY r{i}.txt /app/\nRUN pip install -r /app/r{i}.txt\n" for i in range(8_000)
            ),
            {f"r{i}.txt": f"numpy=={i}.0\n" for i in range(8_000)},
        ),
        0,
        "0 errors",
    ),
    "copies-then-deletions-12k": Case(
        _lint(
            "FROM python:3.12\n"
            + "".join(f"COPY a /d{i}/a\n" for i in range(12_000))
            + "".join(f"RUN rm -rf /x{i}\n" for i in range(12_000)),
            {"a": "a"},
        ),
        0,
        "0 errors",
    ),
    # Probe: a requests file that would block or never end.
    "probe-requests-fifo": Case(
        _probe_requests("request", None), 2, "probe.request.requests-file is not a regular file"
    ),
    "probe-requests-dev-zero": Case(
        _probe_requests("request", "/dev/zero"), 2, "is not a regular file (a device)"
    ),
    "probe-shortage-requests-urandom": Case(
        _probe_requests("shortage", "/dev/urandom"),
        2,
        "probe.shortage.requests-file is not a regular file (a device)",
    ),
    # Images
    "docker-archive-directory": Case(_archive_dir, 2, "is a directory"),
    "gzip-bomb-20gib": Case(_layout(_bomb("gzip")), 1, "limits.layer-max-ratio"),
    "zstd-bomb-20gib": Case(_layout(_bomb("zstd")), 1, "limits.layer-max-ratio"),
    "million-files": Case(_layout(_million), 1, "limits.layer-max-entries"),
    "blob-fifo": Case(
        _layout(lambda d: hostile.layer_blob_replaced(d, "fifo")), 2, "not a regular file (a FIFO)"
    ),
    "blob-symlink-out": Case(
        _layout(lambda d: hostile.layer_blob_replaced(d, "symlink-out")), 2, "out of the layout"
    ),
    "blob-device": Case(
        _layout(lambda d: hostile.layer_blob_replaced(d, "device")), 2, "out of the layout"
    ),
    "layer-media-type": Case(
        _layout(_media_type(layer="text/html")), 2, "which is not an image layer type"
    ),
    "config-media-type": Case(
        _layout(_media_type(config="application/vnd.cncf.helm.config.v1+json")),
        2,
        "is not a container image",
    ),
    "manifest-media-type": Case(
        _layout(_declared_media_type), 2, "which is not a manifest or index type"
    ),
    # Numbers
    "version-100k-digits": Case(lambda _: ["kb", "driver-for", DIGITS], 2, "invalid CUDA version"),
    "driver-100k-digits": Case(
        lambda _: ["kb", "check-require", "--driver", DIGITS], 2, "invalid --driver version"
    ),
    "matrix-million-cells": Case(_wide_matrix, 2, "limit limits.matrix-max-cells"),
}


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    stdout: str
    stderr: str
    wall: float
    cpu: float
    max_rss: int


def _cpu_limited() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_KILL_SECONDS, CPU_KILL_SECONDS + 1))


def run_gpuship(args: list[str], cwd: Path) -> Outcome:
    """Run `gpuship args` under GNU time, which reports that one process's peak RSS and CPU.

    (wait4's rusage from this interpreter would carry pytest's own RSS into the child's
    high-water mark through fork.) A run past the wall guard is killed with its group.
    """
    measured = cwd / "time.txt"
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GPUSHIP_", "GITHUB_"))}
    command = [TIME, "-f", "%M %U %S", "-o", str(measured), GPUSHIP, *args]
    started = time.monotonic()
    with subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=environ,
        text=True,
        start_new_session=True,
        preexec_fn=_cpu_limited,  # noqa: PLW1509 (the child is GNU time, single-threaded)
    ) as child:
        try:
            stdout, stderr = child.communicate(timeout=WALL_GUARD_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            stdout, stderr = child.communicate()
    wall = time.monotonic() - started
    fields = measured.read_text().split() if measured.exists() else []
    # GNU time writes "Command exited with non-zero status N" before the format line.
    rss_kib, user, system = fields[-3:] if len(fields) >= 3 else ["0", "inf", "0"]
    return Outcome(
        exit_code=child.returncode,
        stdout=stdout,
        stderr=stderr,
        wall=wall,
        cpu=float(user) + float(system),
        max_rss=int(rss_kib) * 1024,
    )


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_hostile_input_ends_cleanly(name: str, tmp_path: Path) -> None:
    ends_cleanly(name, CATALOG[name], tmp_path)


@pytest.mark.parametrize("name", sorted(AT_THE_LIMIT))
def test_input_at_the_limit_ends_cleanly(name: str, tmp_path: Path) -> None:
    ends_cleanly(name, AT_THE_LIMIT[name](1.0), tmp_path)


def ends_cleanly(name: str, case: Case, tmp_path: Path) -> None:
    """`case` through the real command: its exit code and message, no traceback, in bounds."""
    args = case.make(tmp_path)
    outcome = run_gpuship(args, tmp_path)
    where = f"{name}: exit {outcome.exit_code}, {outcome.wall:.1f} s wall, {outcome.cpu:.1f} s CPU"
    where += f", {outcome.max_rss >> 20} MiB\n{outcome.stderr[-3000:]}"
    assert outcome.wall < WALL_GUARD_SECONDS, "hung: " + where
    assert outcome.exit_code == case.exit_code, where
    assert "Traceback" not in outcome.stderr, where
    assert case.says in outcome.stderr + outcome.stdout, where
    assert not case.never_says or case.never_says not in outcome.stderr + outcome.stdout, where
    assert outcome.cpu < CPU_SECONDS, where
    assert outcome.max_rss < MAX_RSS_BYTES, where
    if outcome.exit_code in (2, 3):
        errors = [line for line in outcome.stderr.splitlines() if line.startswith("gpuship:")]
        assert len(errors) == 1, where
        assert len(errors[0]) < 600, where
    shutil.rmtree(tmp_path, ignore_errors=True)  # 20 MB bombs and million-file layers
