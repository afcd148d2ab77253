"""The Docker engine as a builder and pusher, through the docker SDK (no buildx needed).

Builds use `APIClient.build` (the engine's classic builder) with the cell's build args,
labels and target, streaming decoded events; pushes use `APIClient.push` per tag and read
the manifest digest from the final `aux` event. Every tag must be accepted and report the
same digest, otherwise the push counts as refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuship.builder.build_log import BuildFailure, ClassicBuildLog
from gpuship.builder.registry_auth import engine_auth, registry_of
from gpuship.docker.build import BuildRequest
from gpuship.docker.engine import Engine, EngineRefused
from gpuship.errors import RegistryUnavailable
from gpuship.registry.credentials import CredentialStore

Progress = Callable[[str], None]
# Push errors that mean "could not reach the registry" rather than "the registry said no".
_UNREACHABLE = (
    "connection refused",
    "no such host",
    "i/o timeout",
    "connection reset",
    "server misbehaving",
    "dial tcp",
    ": eof",
)


@dataclass(frozen=True)
class EngineBuild:
    """A finished engine build: the image id and which steps came from the cache."""

    image_id: str
    steps: tuple[str, ...]
    cached_steps: tuple[str, ...]


class BuildFailed(Exception):
    """The builder stopped with an error; carries the builder's own failure."""

    def __init__(self, failure: BuildFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


@dataclass(frozen=True)
class PushResult:
    """Tags the registry accepted (with their digest) and the first refusal, if any."""

    pushed: Mapping[str, str]
    refused: tuple[str, str] | None  # (tag, the registry's message)


def connect_engine(environ: Mapping[str, str]) -> Engine:
    """The engine of DOCKER_HOST (or the default socket), with a timeout long enough for a
    build step that prints nothing for minutes; DockerUnavailable when it does not answer."""
    return Engine.connect(environ, timeout=600)


def build_image(engine: Engine, request: BuildRequest, progress: Progress) -> EngineBuild:
    """Build with the engine's builder; BuildFailed with the builder's error on failure."""
    log = ClassicBuildLog()
    try:
        dockerfile = str(request.dockerfile.relative_to(request.context))
    except ValueError:
        dockerfile = str(request.dockerfile)  # outside the context: the engine accepts a path
    options: dict[str, Any] = {
        "path": str(request.context),
        "dockerfile": dockerfile,
        "tag": request.tags[0] if request.tags else None,
        "buildargs": dict(request.build_args),
        "labels": dict(request.labels),
        "target": request.target,
        "platform": request.platform,
        "network_mode": request.network,
        "rm": True,
        "forcerm": True,
        "pull": False,
    }
    try:
        for event in engine.build(**options):
            for line in log.feed(event):
                progress(line)
    except EngineRefused as refused:
        raise BuildFailed(BuildFailure(message=refused.message)) from None
    if log.error is not None or log.image_id is None:
        raise BuildFailed(log.failure(request.dockerfile))
    for tag in request.tags[1:]:
        repository, _, name = tag.rpartition(":")
        engine.tag(log.image_id, repository, name)
    return EngineBuild(log.image_id, tuple(log.steps), tuple(log.cached_steps))


def push_tags(
    engine: Engine, tags: Sequence[str], progress: Progress, environ: Mapping[str, str]
) -> PushResult:
    """Push every tag in order; stop at the first the registry refuses.

    Each push carries the credential gpuship's sources hold for that tag's registry
    (`builder/registry_auth.py`), else none: the engine then pushes anonymously.
    """
    store = CredentialStore(environ)
    pushed: dict[str, str] = {}
    for tag in tags:
        repository, _, name = tag.rpartition(":")
        digest: str | None = None
        error: str | None = None
        auth = engine_auth(store.find(registry_of(repository)))
        for event in engine.push(repository, name, auth):
            detail = event.get("errorDetail")
            if event.get("error") or detail:
                error = str((detail or {}).get("message") or event.get("error"))
                break
            aux = event.get("aux")
            if isinstance(aux, dict) and aux.get("Digest"):
                digest = str(aux["Digest"])
        if error is not None:
            if any(marker in error.lower() for marker in _UNREACHABLE):
                raise RegistryUnavailable(f"cannot push {tag}: {error}")
            return PushResult(pushed, (tag, error))
        if digest is None:
            return PushResult(pushed, (tag, "the engine reported no digest for the push"))
        progress(f"pushed {tag} {digest}")
        pushed[tag] = digest
    return PushResult(pushed, None)
