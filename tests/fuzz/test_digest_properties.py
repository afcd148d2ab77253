"""Property tests (hypothesis) for digests from anywhere: any string given as a digest, in a
reference, in a `Docker-Content-Digest` header or in a manifest's descriptor ends in a typed
error or is read; never a traceback (`shake_128:` once reached hashlib's `hexdigest()` without
a length; `foo:` reached `hashlib.new`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest
import requests
import urllib3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuship.errors import InputError, RegistryUnavailable
from gpuship.image.blobstream import BlobError, VerifiedReader
from gpuship.image.source import check_digest as check_content
from gpuship.reference import (
    Repository,
    UnsupportedDigest,
    check_digest,
    content_matches,
    is_digest,
    parse_reference,
)
from gpuship.registry.blob import BlobReader
from gpuship.registry.errors import DigestMismatch
from gpuship.registry.manifest import MEDIA_OCI_MANIFEST, ImageManifest, parse_manifest
from gpuship.registry.reads import _header_digest

SETTINGS = settings(
    max_examples=int(os.environ.get("GPUSHIP_HYPOTHESIS_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Strings near the grammar (algorithm ":" encoded) as well as any text: hashlib's own names
# (shake_128, md5, blake2b), upper case, separators, empty parts.
ALGORITHMS = st.sampled_from(
    ["sha256", "sha512", "shake_128", "shake_256", "md5", "sha1", "blake2b", "foo", "SHA256"]
) | st.from_regex(r"[a-z0-9_+.-]{0,12}", fullmatch=True)
ENCODED = st.from_regex(r"[a-zA-Z0-9=_-]{0,130}", fullmatch=True) | st.sampled_from(
    ["a" * 64, "0" * 128, "A" * 64]
)
DIGESTS = st.builds(lambda a, e: f"{a}:{e}", ALGORITHMS, ENCODED) | st.text(max_size=80)


@SETTINGS
@given(DIGESTS, st.binary(max_size=64))
def test_any_digest_is_verified_or_refused_as_input(text: str, data: bytes) -> None:
    try:
        assert check_digest(text) == text
    except UnsupportedDigest as error:
        assert isinstance(error, InputError)  # exit 2: the user or the image named it
        assert "\n" not in str(error)
        with pytest.raises(UnsupportedDigest):
            content_matches(data, text)
        return
    assert is_digest(text)
    assert isinstance(content_matches(data, text), bool)


@SETTINGS
@given(DIGESTS)
def test_any_digest_in_a_reference_parses_or_is_an_input_error(text: str) -> None:
    with contextlib.suppress(InputError):
        reference = parse_reference(f"registry.example/app@{text}")
        assert reference.digest == text
    with contextlib.suppress(InputError):
        Repository("registry.example", "app").at(text)


def _response(header: str, body: bytes = b"{}") -> requests.Response:
    response = requests.Response()
    response.status_code = 200
    response.headers["Docker-Content-Digest"] = header
    response.headers["Content-Length"] = str(len(body))
    response.raw = urllib3.HTTPResponse(io.BytesIO(body), preload_content=False)
    response.request = requests.Request("GET", "http://registry.example/v2/").prepare()
    return response


@SETTINGS
@given(DIGESTS)
def test_any_digest_header_is_used_or_the_registry_answer_is_refused(header: str) -> None:
    try:
        digest = _header_digest(_response(header), "GET registry.example/app:v1")
    except RegistryUnavailable as error:  # exit 3: the registry sent it
        assert "Docker-Content-Digest" in str(error)
        return
    assert digest is None if not header else digest == header.strip()


@SETTINGS
@given(DIGESTS, st.binary(max_size=64))
def test_any_descriptor_digest_parses_and_reads_or_is_an_input_error(
    text: str, data: bytes
) -> None:
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": text},
        "layers": [],
    }
    try:
        document = parse_manifest(json.dumps(manifest).encode(), MEDIA_OCI_MANIFEST)
    except InputError:
        return
    assert isinstance(document, ImageManifest)
    digest = document.config.digest
    # Each reader of content by digest: the registry's blob stream, the image readers'.
    with (
        contextlib.suppress(UnsupportedDigest, DigestMismatch),
        BlobReader(_response("", data), digest, "registry.example/app") as reader,
    ):
        assert reader.read() == data
    with contextlib.suppress(InputError):
        check_content(data, digest, "config")
    with contextlib.suppress(BlobError):
        VerifiedReader(io.BytesIO(data), digest=digest, size=None, name="config").finish()
