"""OCI Distribution API client (distribution-spec v1.1) on `requests`.

Every manifest read is checked against its digest (the one asked for, and the registry's
`Docker-Content-Digest`); blobs are checked when their stream ends (`BlobReader`). Requests carry
the scopes they need, so Bearer tokens are asked for exactly that access.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, NamedTuple
from urllib.parse import urljoin, urlsplit

import requests

from gpuship import __version__
from gpuship.documents import load_json
from gpuship.errors import GpushipError, InputError, LimitExceeded, RegistryUnavailable
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.reference import (
    Reference,
    Repository,
    UnsupportedDigest,
    check_digest,
    content_matches,
    sha256_digest,
)
from gpuship.registry.auth import Authenticator
from gpuship.registry.blob import BlobReader
from gpuship.registry.deadline import Deadline
from gpuship.registry.errors import (
    DigestMismatch,
    NotFound,
    RegistryAuthError,
    RegistryRequestError,
)
from gpuship.registry.manifest import (
    MANIFEST_MEDIA_TYPES,
    MEDIA_OCI_INDEX,
    Descriptor,
    ImageIndex,
    parse_manifest,
)
from gpuship.registry.origin import Origin
from gpuship.registry.redirects import follow_redirects
from gpuship.registry.retry import VERIFY_ATTEMPTS, RetryPolicy
from gpuship.registry.tls import TlsTrust, UntrustedCertificate, certificate_error, speaks_tls
from gpuship.registry.transport import Transport, document_of, ended_by_close, uses_plain_http

PULL = "pull"
PUSH = "pull,push"
DELETE = "delete"
_ACCEPT = ", ".join(MANIFEST_MEDIA_TYPES)
_ERROR_BODY_LIMIT = 300
DEFAULT_CHUNK_SIZE = 16 << 20


class FetchedManifest(NamedTuple):
    """Manifest bytes exactly as served, their media type and their verified digest."""

    data: bytes
    media_type: str
    digest: str


class FetchedDescriptor(NamedTuple):
    """What a manifest HEAD tells: digest, media type and size."""

    digest: str
    media_type: str
    size: int


def _header_digest(response: requests.Response, what: str) -> str | None:
    """The `Docker-Content-Digest` of an answer, if it sent one: a digest gpuship can verify, or
    RegistryUnavailable (the registry's answer is at fault, not the user's input)."""
    value = response.headers.get("Docker-Content-Digest")
    if not value:
        return None
    try:
        return check_digest(value.strip(), f"Docker-Content-Digest of {what}")
    except UnsupportedDigest as error:
        raise RegistryUnavailable(f"registry answer unusable: {error}") from None


def _media_type(response: requests.Response, data: bytes | None) -> str:
    """The document's own `mediaType` when it has one (that is what a PUT must send), else the
    Content-Type without parameters."""
    if data:
        try:
            document = load_json(data, "manifest", DEFAULT_LIMITS)
        except InputError:
            document = None
        if isinstance(document, dict) and isinstance(document.get("mediaType"), str):
            return str(document["mediaType"])
    return response.headers.get("Content-Type", "").split(";", 1)[0].strip()


def _error_codes(response: requests.Response) -> tuple[tuple[str, ...], str]:
    """OCI error codes and a short text from an error body (which may not be JSON at all), on
    one line: a body's line breaks would start lines of their own in a message."""
    codes, text = _error_body(response)
    return codes, " ".join(text.split())[:_ERROR_BODY_LIMIT]


def _error_body(response: requests.Response) -> tuple[tuple[str, ...], str]:
    text = response.text[:_ERROR_BODY_LIMIT] if response.content else ""
    try:
        body = (
            load_json(response.content, "error body", DEFAULT_LIMITS) if response.content else None
        )
    except InputError:
        return (), text
    errors = body.get("errors") if isinstance(body, dict) else None
    if not isinstance(errors, list):
        return (), text
    codes = tuple(str(e.get("code", "")) for e in errors if isinstance(e, dict))
    messages = "; ".join(
        f"{e.get('code', '')}: {e.get('message', '')}" for e in errors if isinstance(e, dict)
    )
    return codes, messages or text


class RegistryClient:
    """Talks to any number of registries; one instance per command run."""

    def __init__(
        self,
        *,
        insecure: Sequence[str] = (),
        environ: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        docker_config: Path | None = None,
        session: requests.Session | None = None,
        deadline: Deadline | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self._insecure = tuple(insecure)
        self._schemes: dict[str, str] = {}
        self._lock = threading.Lock()
        environ = os.environ if environ is None else environ
        self._session = session or requests.Session()
        self._session.headers["User-Agent"] = f"gpuship/{__version__}"
        # The environment is read here, once: requests with trust_env would scan it again on
        # every request for proxies (about a fifth of a manifest GET's CPU) and add ~/.netrc
        # credentials to any host. CAs come from TlsTrust, proxies from `_proxies`.
        self._session.trust_env = False
        self._proxies_by_origin: dict[str, dict[str, str]] = {}
        self._tls = TlsTrust(environ)
        self.limits = limits
        self._transport = Transport(
            self._session, retry or RetryPolicy(), deadline=deadline, limits=self.limits
        )
        self._tls.mount(self._session)  # after the transport's: replaces its https:// adapter
        self._auth = Authenticator(self._send, environ, docker_config, self._insecure)

    @property
    def deadline(self) -> Deadline:
        """The deadline every request of this client runs under."""
        return self._transport.deadline

    def close(self) -> None:
        """Release pooled connections."""
        self._transport.close()
        self._session.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- plumbing ---------------------------------------------------------------------------

    def base_url(self, repository: Repository) -> str:
        """`http(s)://host` serving the API for the repository's registry."""
        return f"{self._scheme(repository.api_host)}://{repository.api_host}"

    def _scheme(self, host: str) -> str:
        """HTTPS, except for loopback and `registries.insecure` hosts that do not speak TLS.

        Those are tried over HTTPS first (certificate verified) and fall back to plain HTTP
        only when the host answers TLS with something that is not TLS, as Docker does for
        insecure registries (moby `daemon/pkg/registry/service.go` lookupV2Endpoints) except
        that verification is never skipped: an untrusted certificate is an error.
        """
        if not uses_plain_http(host, self._insecure):
            return "https"
        with self._lock:
            if host not in self._schemes:
                self._schemes[host] = self._probe_tls(host)
            return self._schemes[host]

    def _probe_tls(self, host: str) -> str:
        url = f"https://{host}/v2/"
        proxies = self._proxies(url)
        if not proxies and not self._may_speak_tls(Origin.of(url)):
            return "http"
        try:
            self._transport.probe(
                "GET", url, verify=self._tls.verify, allow_redirects=False, proxies=proxies
            ).close()
        except requests.exceptions.SSLError as error:
            if certificate_error(error) is not None:
                raise RegistryUnavailable(
                    f"registry {host} serves HTTPS with a certificate that is not trusted; "
                    f"{self._tls.advice(host)}"
                ) from None
            return "http"
        except requests.RequestException:
            return "http"
        return "https"

    def _may_speak_tls(self, origin: Origin) -> bool:
        """False when a direct handshake shows the host does not speak TLS (a plain-HTTP
        registry then costs no CA bundle load); True when it does, or when time is up (the
        probe proper then reports the deadline)."""
        retry, left = self._transport.retry, self._transport.deadline.remaining()
        timeout = min(retry.connect_timeout_s, retry.timeout_s, left)
        return timeout <= 0 or speaks_tls(origin.host, origin.port, timeout)

    def _request(
        self,
        method: str,
        repository: Repository,
        path: str,
        *,
        access: Mapping[str, str],
        ok: Sequence[int],
        **kwargs: Any,
    ) -> requests.Response:
        """Send with auth; return responses whose status is in `ok`, raise typed errors else.

        The registry's credential (or token) goes only to the registry's own origin: not to an
        upload `Location` on another host, not along a redirect to blob storage.
        """
        base = self.base_url(repository)
        url = path if path.startswith(("http://", "https://")) else base + path
        registry = repository.registry
        home = Origin.of(base)
        headers: dict[str, str] = dict(kwargs.pop("headers", None) or {})
        at_home = Origin.of(url) == home
        authorization = self._auth.header(registry, home, access) if at_home else None
        if authorization is not None:
            headers["Authorization"] = authorization
        response = self._send(method, url, headers=headers, home=home, **kwargs)
        if at_home and response.status_code == 401 and "WWW-Authenticate" in response.headers:
            challenge = response.headers["WWW-Authenticate"]
            response.close()
            headers["Authorization"] = self._auth.answer(registry, home, challenge, access)
            response = self._send(method, url, headers=headers, home=home, **kwargs)
        if response.status_code in ok:
            return response
        raise self._error_for(method, repository, path, access, response)

    def _send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        home: Origin | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        """One request with redirects followed by hand (`follow_redirects`), verifying TLS
        against the CAs the environment names."""
        kwargs.setdefault("verify", self._tls.verify)
        try:
            if kwargs.pop("allow_redirects", True) is False:
                return self._hop(
                    method, url, headers=dict(headers or {}), allow_redirects=False, **kwargs
                )
            return follow_redirects(
                self._hop, method, url, dict(headers or {}), home=home, **kwargs
            )
        except UntrustedCertificate as error:  # here the advice can name the CA settings
            advice = self._tls.advice(error.host)
            raise UntrustedCertificate(f"{error}; {advice}", host=error.host) from None

    def _hop(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        """One request to `url` through the proxy the environment names for its origin (a
        redirect to blob storage may take another)."""
        return self._transport.send(method, url, proxies=self._proxies(url), **kwargs)

    def _proxies(self, url: str) -> dict[str, str]:
        """The proxies HTTP(S)_PROXY, ALL_PROXY and NO_PROXY give for `url`, as requests picks
        them (its own lookup, on the process environment as before), once per origin."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}/"
        if origin not in self._proxies_by_origin:  # a race only computes the same value twice
            self._proxies_by_origin[origin] = requests.utils.get_environ_proxies(origin)
        return self._proxies_by_origin[origin]

    def _error_for(
        self,
        method: str,
        repository: Repository,
        path: str,
        access: Mapping[str, str],
        response: requests.Response,
    ) -> GpushipError:
        """The typed error for a response that is not what the request expects."""
        status = response.status_code
        codes, text = _error_codes(response)
        response.close()
        what = f"{method} {repository.registry}{_path_only(path)}"
        if status >= 500 or status in (408, 429):
            return RegistryUnavailable(
                f"registry {repository.registry} answered HTTP {status} to {what} after retries"
                + (f": {text}" if text else "")
            )
        if status in (401, 403):
            wanted = ", ".join(f"{name} ({actions})" for name, actions in access.items())
            return RegistryAuthError(
                f"registry {repository.registry} denied {what} (HTTP {status}) needing "
                f"{wanted or 'access'} with {self._auth.source(repository.registry)}"
                + (f": {text}" if text else ""),
                status=status,
                codes=codes,
            )
        if status == 404:
            return NotFound(
                f"{what}: not found (HTTP 404)" + (f": {text}" if text else ""),
                status=status,
                codes=codes,
            )
        return RegistryRequestError(
            f"registry {repository.registry} refused {what} with HTTP {status}"
            + (f": {text}" if text else ""),
            status=status,
            codes=codes,
        )

    # -- manifests --------------------------------------------------------------------------

    def get_manifest(self, ref: Reference) -> FetchedManifest:
        """GET a manifest by tag or digest, with its digest verified (read again if not)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._get_manifest_once(ref)
            except DigestMismatch:
                if attempt == VERIFY_ATTEMPTS:
                    raise

    def _get_manifest_once(self, ref: Reference) -> FetchedManifest:
        path = f"/v2/{ref.name}/manifests/{ref.identifier}"
        response = self._request(
            "GET",
            ref.repository,
            path,
            access={ref.name: PULL},
            ok=(200,),
            headers={"Accept": _ACCEPT},
            limit="manifest_max_bytes",
        )
        with response:
            data = response.content
            header_digest = _header_digest(response, f"GET {ref}")
            media_type = _media_type(response, data)
            if not (ref.digest or header_digest) and ended_by_close(response):
                with document_of(response) as body:  # nothing to verify it by: is it whole?
                    load_json(body, f"manifest {ref}", self.limits)
        for expected in (ref.digest, header_digest):
            if expected and not content_matches(data, expected):
                raise DigestMismatch(
                    f"manifest {ref} from {ref.registry} does not match digest {expected} "
                    f"(content is {sha256_digest(data)})"
                )
        digest = ref.digest or header_digest or sha256_digest(data)
        return FetchedManifest(data, media_type, digest)

    def head_manifest(self, ref: Reference) -> FetchedDescriptor | None:
        """HEAD a manifest: its digest, type and size, or None if it does not exist."""
        path = f"/v2/{ref.name}/manifests/{ref.identifier}"
        response = self._request(
            "HEAD",
            ref.repository,
            path,
            access={ref.name: PULL},
            ok=(200, 404),
            headers={"Accept": _ACCEPT},
        )
        with response:
            if response.status_code == 404:
                return None
            digest = _header_digest(response, f"HEAD {ref}")
            media_type = _media_type(response, None)
            length = response.headers.get("Content-Length", "")
        mismatch = ref.digest is not None and digest != ref.digest
        if not digest or not media_type or not length.isdigit() or mismatch:
            # Registries before distribution-spec `main` may omit the digest header on HEAD; a
            # header naming another digest than asked for is checked against the bytes.
            try:
                fetched = self.get_manifest(ref)
            except NotFound:
                return None
            return FetchedDescriptor(fetched.digest, fetched.media_type, len(fetched.data))
        return FetchedDescriptor(digest, media_type, int(length))

    def resolve_digest(self, ref: Reference) -> str:
        """The digest `ref` points at (HEAD, GET fallback); NotFound if it does not exist."""
        if ref.digest is not None:
            return ref.digest
        found = self.head_manifest(ref)
        if found is None:
            raise NotFound(f"{ref}: no such tag", status=404, codes=("MANIFEST_UNKNOWN",))
        return found.digest

    def put_manifest(self, ref: Reference, data: bytes, media_type: str) -> str:
        """PUT exact manifest bytes under `ref.identifier` (tag or digest); return the digest.

        An answer naming another digest is sent again (the PUT is idempotent) before it is
        an error: one garbled answer says nothing about what was stored.
        """
        digest = sha256_digest(data)
        if ref.digest is not None and ref.digest != digest:
            raise DigestMismatch(f"refusing to PUT bytes hashing to {digest} as {ref.digest}")
        path = f"/v2/{ref.name}/manifests/{ref.identifier}"
        for _ in range(VERIFY_ATTEMPTS):
            response = self._request(
                "PUT",
                ref.repository,
                path,
                access={ref.name: PUSH},
                ok=(200, 201, 202),
                data=data,
                headers={"Content-Type": media_type},
            )
            with response:
                answered = response.headers.get("Docker-Content-Digest")
            if not answered or answered == digest:
                return digest
        raise DigestMismatch(
            f"registry {ref.registry} stored {ref} as {answered}, expected {digest}"
        )

    def delete_manifest(self, ref: Reference) -> None:
        """DELETE a manifest by digest (or a tag, on registries that support tag deletion)."""
        path = f"/v2/{ref.name}/manifests/{ref.identifier}"
        self._request(
            "DELETE", ref.repository, path, access={ref.name: DELETE}, ok=(200, 202, 204)
        ).close()

    # -- blobs ------------------------------------------------------------------------------

    def blob_exists(self, repo: Repository, digest: str) -> bool:
        """True if `repo` holds blob `digest`."""
        response = self._request(
            "HEAD",
            repo,
            f"/v2/{repo.name}/blobs/{digest}",
            access={repo.name: PULL},
            ok=(200, 404),
        )
        response.close()
        return response.status_code == 200

    def open_blob(self, repo: Repository, digest: str) -> BlobReader:
        """Stream blob `digest`; the returned reader verifies the digest when it hits EOF."""
        check_digest(digest, f"blob in {repo}")  # before asking for what could not be verified
        response = self._request(
            "GET",
            repo,
            f"/v2/{repo.name}/blobs/{digest}",
            access={repo.name: PULL},
            ok=(200,),
            stream=True,
        )
        return BlobReader(response, digest, f"{repo}")

    def read_blob(self, repo: Repository, digest: str, limit: str = "json_max_bytes") -> bytes:
        """A small blob (a config, a record) read whole and verified, at most the bytes of the
        limit named `limit`. A stream that breaks or does not match its digest is read again
        (VERIFY_ATTEMPTS)."""
        cap: int = getattr(self.limits, limit)
        where = f"blob {digest} in {repo}"
        attempt = 0
        while True:
            attempt += 1
            try:
                with self.open_blob(repo, digest) as reader:
                    if reader.size is not None and reader.size > cap:
                        raise LimitExceeded(
                            where, f"it has {reader.size} bytes", Limits.key(limit), cap
                        )
                    chunks: list[bytes] = []
                    total = 0
                    for chunk in reader.iter_chunks():
                        total += len(chunk)
                        if total > cap:
                            raise LimitExceeded(
                                where, f"it is larger than {cap} bytes", Limits.key(limit), cap
                            )
                        chunks.append(chunk)
                return b"".join(chunks)
            except RegistryUnavailable:  # DigestMismatch and broken streams
                if attempt == VERIFY_ATTEMPTS:
                    raise

    def mount_blob(self, repo: Repository, digest: str, source: Repository) -> bool:
        """Cross-repository mount in one registry: True if mounted, False if declined."""
        response = self._request(
            "POST",
            repo,
            f"/v2/{repo.name}/blobs/uploads/",
            access={repo.name: PUSH, source.name: PULL},
            ok=(201, 202),
            params={"mount": digest, "from": source.name},
        )
        with response:
            if response.status_code == 201:
                return True
            location = response.headers.get("Location")
        if location:
            self._cancel_upload(repo, location)
        return False

    def _cancel_upload(self, repo: Repository, location: str) -> None:
        # Best effort: an abandoned upload session is purged by the registry anyway.
        try:
            self._request(
                "DELETE",
                repo,
                self._absolute(repo, location),
                access={repo.name: PUSH},
                ok=(200, 202, 204, 404, 405),
            ).close()
        except (RegistryRequestError, RegistryUnavailable):
            return

    def _absolute(self, repo: Repository, location: str) -> str:
        return urljoin(self.base_url(repo) + "/", location)

    def push_blob(self, repo: Repository, data: bytes) -> str:
        """Upload a small blob held in memory; returns its digest.

        One POST carrying the content and its digest (distribution-spec end-4b); a registry
        that opens a session instead (202) gets the content with a PUT. If that fails, the
        blob may still have landed (an answer lost): it is looked for before trying again.
        """
        digest = sha256_digest(data)
        attempt = 0
        while True:
            attempt += 1
            try:
                self._push_blob_once(repo, data, digest)
                return digest
            except (RegistryUnavailable, RegistryRequestError) as error:
                if isinstance(error, RegistryAuthError):
                    raise
                if self.blob_exists(repo, digest):
                    return digest
                if attempt == VERIFY_ATTEMPTS:
                    raise

    def _push_blob_once(self, repo: Repository, data: bytes, digest: str) -> None:
        response = self._request(
            "POST",
            repo,
            f"/v2/{repo.name}/blobs/uploads/",
            access={repo.name: PUSH},
            ok=(201, 202),
            params={"digest": digest},
            data=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        with response:
            if response.status_code == 201:
                return
            location = response.headers.get("Location")
        if not location:
            raise RegistryRequestError(
                f"registry {repo.registry} opened an upload without a Location", status=202
            )
        self._request(
            "PUT",
            repo,
            self._absolute(repo, location),
            access={repo.name: PUSH},
            ok=(201,),
            params={"digest": digest},
            data=data,
            headers={"Content-Type": "application/octet-stream"},
        ).close()

    def upload_blob(
        self,
        repo: Repository,
        digest: str,
        stream: BinaryIO | BlobReader,
        size: int | None,
        *,
        chunk_size: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Upload a blob: monolithic (one PUT) without `chunk_size`, else chunked PATCHes."""
        response = self._request(
            "POST",
            repo,
            f"/v2/{repo.name}/blobs/uploads/",
            access={repo.name: PUSH},
            ok=(202,),
        )
        with response:
            location = response.headers.get("Location")
        if not location:
            raise RegistryRequestError(
                f"registry {repo.registry} opened an upload without a Location", status=202
            )
        location = self._absolute(repo, location)
        if chunk_size is None:
            if size is None:
                raise RegistryRequestError(
                    f"monolithic upload of {digest} needs its size", status=0
                )
            self._request(
                "PUT",
                repo,
                location,
                access={repo.name: PUSH},
                ok=(201,),
                params={"digest": digest},
                data=_Body(stream, size, progress),
                headers={"Content-Type": "application/octet-stream"},
            ).close()
            return
        offset = 0
        while True:
            chunk = stream.read(chunk_size)
            if not chunk:
                break
            response = self._request(
                "PATCH",
                repo,
                location,
                access={repo.name: PUSH},
                ok=(202,),
                data=chunk,
                headers={
                    "Content-Type": "application/octet-stream",
                    "Content-Range": f"{offset}-{offset + len(chunk) - 1}",
                },
            )
            with response:
                location = self._absolute(repo, response.headers.get("Location") or location)
            offset += len(chunk)
            if progress is not None:
                progress(len(chunk))
        self._request(
            "PUT",
            repo,
            location,
            access={repo.name: PUSH},
            ok=(201,),
            params={"digest": digest},
            data=b"",
            headers={"Content-Type": "application/octet-stream"},
        ).close()

    def copy_blob(
        self,
        source: Repository,
        target: Repository,
        digest: str,
        *,
        attempts: int = 3,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> str:
        """Make `target` hold blob `digest` from `source`: "exists", "mounted" or "copied".

        Same registry: a cross-repository mount straight away (one request; a registry answers
        201 for a blob the target already has too). Otherwise, unless the target has it, the
        blob is streamed from source to target in chunks, restarted from the beginning if
        either side fails mid-way.
        """
        if source.registry == target.registry and self.mount_blob(target, digest, source):
            return "mounted"
        if self.blob_exists(target, digest):
            return "exists"
        attempt = 0
        while True:
            attempt += 1
            try:
                with self.open_blob(source, digest) as reader:
                    self.upload_blob(
                        target,
                        digest,
                        reader,
                        reader.size,
                        chunk_size=chunk_size,
                        progress=progress,
                    )
                return "copied"
            except RegistryAuthError:
                raise
            except (RegistryUnavailable, RegistryRequestError):
                # A broken stream or a half-written upload session: start the blob over.
                if attempt == attempts:
                    raise

    # -- listing ----------------------------------------------------------------------------

    def list_tags(self, repo: Repository, *, page_size: int | None = None) -> list[str]:
        """Every tag of `repo`: follows `Link: rel="next"`, else pages with `n`/`last`."""
        tags: list[str] = []
        seen: set[str] = set()
        url = f"/v2/{repo.name}/tags/list"
        params: dict[str, str] | None = {"n": str(page_size)} if page_size else None
        while True:
            response = self._request(
                "GET", repo, url, access={repo.name: PULL}, ok=(200,), params=params
            )
            with response, document_of(response) as data:
                body = load_json(data, f"tag list of {repo}", self.limits)
                if not isinstance(body, dict):
                    raise InputError(f"tag list of {repo} is not a JSON object")
                next_link = response.links.get("next", {}).get("url")
                page_url = response.url
            page = [t for t in (body.get("tags") or []) if isinstance(t, str)]
            fresh = [t for t in page if t not in seen]
            tags += fresh
            seen.update(fresh)
            if next_link:
                url, params = urljoin(page_url, next_link), None
            elif page_size and len(page) >= page_size and fresh:
                params = {"n": str(page_size), "last": page[-1]}
            else:
                return tags

    def referrers(self, ref: Reference, *, artifact_type: str | None = None) -> list[Descriptor]:
        """Manifests whose `subject` is `ref.digest`: referrers API, else the `sha256-…` tag."""
        if ref.digest is None:
            raise NotFound(f"{ref}: referrers need a digest", status=400)
        url = f"/v2/{ref.name}/referrers/{ref.digest}"
        params = {"artifactType": artifact_type} if artifact_type else None
        found: list[Descriptor] = []
        while True:
            response = self._request(
                "GET",
                ref.repository,
                url,
                access={ref.name: PULL},
                ok=(200, 404),
                params=params,
                headers={"Accept": MEDIA_OCI_INDEX},
            )
            with response:
                if response.status_code == 404:
                    return found or self._referrers_by_tag(ref, artifact_type)
                filtered = "artifactType" in response.headers.get("OCI-Filters-Applied", "")
                with document_of(response) as data:
                    index = _parse_index(data, f"referrers of {ref}")
                next_link = response.links.get("next", {}).get("url")
                page_url = response.url
            found += [
                d
                for d in index.manifests
                if filtered or artifact_type is None or d.artifact_type == artifact_type
            ]
            if not next_link:
                return found
            url, params = urljoin(page_url, next_link), None

    def has_referrers_api(self, ref: Reference) -> bool:
        """True when the registry answers the referrers API for `ref` (a digest reference)."""
        response = self._request(
            "GET",
            ref.repository,
            f"/v2/{ref.name}/referrers/{ref.identifier}",
            access={ref.name: PULL},
            ok=(200, 404),
            headers={"Accept": MEDIA_OCI_INDEX},
        )
        response.close()
        return response.status_code == 200

    def _referrers_by_tag(self, ref: Reference, artifact_type: str | None) -> list[Descriptor]:
        assert ref.digest is not None
        algorithm, _, encoded = ref.digest.partition(":")
        try:
            fetched = self.get_manifest(ref.repository.tag(f"{algorithm}-{encoded}"[:128]))
        except NotFound:
            return []
        index = _parse_index(fetched.data, f"referrers tag of {ref}")
        return [
            d for d in index.manifests if artifact_type is None or d.artifact_type == artifact_type
        ]

    def ping(self, registry: str) -> None:
        """GET /v2/ (authenticating if asked): fails if the registry is not reachable or usable."""
        probe = Repository(registry, "")
        self._request("GET", probe, "/v2/", access={}, ok=(200,)).close()


def _path_only(path: str) -> str:
    """The path of a request for messages: no scheme/host, no query (upload state, scopes)."""
    without_query = path.split("?", 1)[0]
    if without_query.startswith(("http://", "https://")):
        return "/" + without_query.split("/", 3)[-1]
    return without_query


def _parse_index(data: bytes, where: str) -> ImageIndex:
    document = parse_manifest(data, MEDIA_OCI_INDEX)
    if not isinstance(document, ImageIndex):
        raise RegistryRequestError(f"{where} is not an image index", status=200)
    return document


class _Body:
    """Request body streamed from a reader in 1 MiB pieces with a known length.

    Only `__iter__` and `__len__`: requests then sets Content-Length and http.client sends the
    pieces as they are (it would read a file-like object 8 KiB at a time).
    """

    def __init__(
        self, stream: BinaryIO | BlobReader, size: int, progress: Callable[[int], None] | None
    ) -> None:
        self._stream = stream
        self._size = size
        self._progress = progress

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[bytes]:
        while chunk := self._stream.read(1 << 20):
            if self._progress is not None:
                self._progress(len(chunk))
            yield chunk
