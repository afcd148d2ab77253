"""Digests gpuship cannot verify, through the real `gpuship` commands: a registry that sends
`Docker-Content-Digest: shake_128:...` (its answer is unusable: exit 3) and an image whose
manifest names its config as `foo:...` (the image is at fault: exit 2). One line naming the
digest, never a traceback.

The real docker-registry refuses to store either (it parses digests with go-digest), so a small
registry made here serves them: `/v2/`, one manifest under tag `v1`, its blobs, the tag list.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from bed.servers import serving as bed_serving
from gpuship.cli.main import main

pytestmark = pytest.mark.integration

AUDIT = Path(__file__).resolve().parents[2] / "data/gpu-readings/NVIDIA-H200-580.159.04.audit.json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = json.dumps(
    {"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}
).encode()


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _manifest(config_digest: str) -> bytes:
    config = {
        "mediaType": "application/vnd.oci.image.config.v1+json",
        "digest": config_digest,
        "size": len(CONFIG),
    }
    document = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": []}
    return json.dumps(document).encode()


@contextmanager
def serving(manifest: bytes, header_digest: str) -> Iterator[str]:
    """A registry holding `manifest` under `app:v1`, answering `header_digest` for it."""
    blobs = {_sha256(CONFIG): CONFIG}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def _answer(self, body: bytes, headers: dict[str, str], status: int = 200) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/v2/":
                self._answer(b"{}", {"Content-Type": "application/json"})
            elif path in (f"/v2/app/manifests/{name}" for name in ("v1", _sha256(manifest))):
                headers = {"Content-Type": OCI_MANIFEST, "Docker-Content-Digest": header_digest}
                self._answer(manifest, headers)
            elif path.startswith("/v2/app/blobs/") and path.rsplit("/", 1)[1] in blobs:
                self._answer(blobs[path.rsplit("/", 1)[1]], {})
            elif path == "/v2/app/tags/list":
                self._answer(json.dumps({"name": "app", "tags": ["v1"]}).encode(), {})
            else:
                self._answer(b'{"errors": [{"code": "NAME_UNKNOWN"}]}', {}, status=404)

        do_HEAD = do_GET

    with bed_serving(Handler) as host:
        yield host


def _gpuship(*argv: str) -> tuple[int, str]:
    stderr = io.StringIO()
    code = main([*argv, "--deadline", "20"], environ={}, stdout=io.StringIO(), stderr=stderr)
    return code, stderr.getvalue()


_READERS = {
    "inspect": ["inspect", "{host}/app:v1"],
    "verify": ["verify", "{host}/app:v1", "--audit", str(AUDIT)],
    "prune": ["prune", "{host}/app"],
    "history of a tag": ["history", "{host}/app:v1"],
    "promote": ["promote", "{host}/app@{digest}", "--move", "stable"],
}


@pytest.mark.parametrize("header", ["shake_128:" + "ab" * 16, "foo:bar", "sha256:short"])
@pytest.mark.parametrize("command", _READERS, ids=str)
def test_a_digest_header_gpuship_cannot_verify_is_the_registrys_fault(command: str, header: str):
    manifest = _manifest(_sha256(CONFIG))
    with serving(manifest, header) as host:
        argv = [a.format(host=host, digest=_sha256(manifest)) for a in _READERS[command]]
        code, stderr = _gpuship(*argv)
    assert code == 3, stderr
    assert stderr.startswith("gpuship: error: ") and stderr.count("\n") == 1, stderr
    assert "Docker-Content-Digest of " in stderr and repr(header) in stderr, stderr


@pytest.mark.parametrize("config_digest", ["foo:" + "a" * 64, "shake_128:" + "ab" * 16])
@pytest.mark.parametrize("command", ["inspect", "verify"], ids=str)
def test_an_image_naming_content_by_an_unknown_algorithm_is_an_input_error(
    command: str, config_digest: str
):
    manifest = _manifest(config_digest)
    with serving(manifest, _sha256(manifest)) as host:
        argv = [a.format(host=host, digest=_sha256(manifest)) for a in _READERS[command]]
        code, stderr = _gpuship(*argv)
    assert code == 2, stderr
    assert stderr.startswith("gpuship: error: ") and stderr.count("\n") == 1, stderr
    algorithm = config_digest.partition(":")[0]
    assert f"uses the algorithm {algorithm!r}" in stderr, stderr
    assert "cannot verify content by" in stderr, stderr


@pytest.mark.parametrize("digest", ["foo:" + "a" * 64, "shake_128:" + "ab" * 16])
def test_a_reference_by_an_unknown_algorithm_is_refused_before_any_request(digest: str):
    code, stderr = _gpuship("inspect", f"127.0.0.1:9/app@{digest}")
    assert code == 2, stderr
    assert "cannot verify content by" in stderr and "Traceback" not in stderr
