"""The Docker engine, reached one way: connect, ask, and turn the SDK's errors into ours.

Every stage that needs the engine (reading a local image, building and pushing, `verify
--smoke`, reading `docker info`) goes through `Engine`; only this module imports the docker
SDK, so how the engine is found (`DOCKER_HOST`, else the default socket) and how its
failures read is answered once. Errors: `DockerUnavailable` when the engine does not answer,
`ImageMissing` for an image it does not hold, `EngineRefused` when it answers with an error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuship.errors import DockerUnavailable

DEFAULT_ADDRESS = "unix:///var/run/docker.sock"
_MESSAGE_LIMIT = 300


class EngineRefused(Exception):
    """The engine answered a request with an error; `message` is its one-line explanation."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ImageMissing(EngineRefused):
    """The engine does not hold the image asked for."""


@dataclass(frozen=True)
class GpuRequest:
    """GPUs a container asks for, as `docker run --gpus`: all of them, or these ids/UUIDs."""

    device_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContainerOptions:
    """What a service container needs beyond a one-shot probe: `docker run -p 127.0.0.1::PORT
    -v ... --label ... --shm-size ... --memory ...`."""

    publish: int | None = None
    volumes: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    shm_size: str | None = None
    memory_limit: str | None = None

    def sdk_arguments(self) -> dict[str, Any]:
        arguments: dict[str, Any] = {"labels": dict(self.labels)}
        if self.publish is not None:
            # A free host port on loopback only: the probe runs on the same host.
            arguments["ports"] = {f"{self.publish}/tcp": ("127.0.0.1", None)}
        if self.volumes:
            arguments["volumes"] = list(self.volumes)
        if self.shm_size:
            arguments["shm_size"] = self.shm_size
        if self.memory_limit:
            arguments["mem_limit"] = self.memory_limit
        return arguments


def engine_address(environ: Mapping[str, str]) -> str:
    """Where the engine is looked for: `DOCKER_HOST`, else the default socket."""
    return environ.get("DOCKER_HOST") or DEFAULT_ADDRESS


def explain(error: BaseException) -> str:
    """One line from an SDK error: its explanation when the engine gave one."""
    text = str(getattr(error, "explanation", None) or error)
    return " ".join(text.split())[:_MESSAGE_LIMIT]


class Engine:
    """A connected engine; use as a context manager, or call `close()`."""

    def __init__(self, client: Any, address: str) -> None:
        self._client = client
        self.address = address

    @classmethod
    def connect(cls, environ: Mapping[str, str], *, timeout: float = 60) -> Engine:
        """Connect and ping; DockerUnavailable, naming the address, when nothing answers."""
        import docker

        address = engine_address(environ)
        try:
            client = docker.DockerClient.from_env(environment=dict(environ), timeout=timeout)
            client.ping()
        except docker.errors.DockerException as error:
            # The SDK's message is a nested urllib3 repr; the address says more.
            raise DockerUnavailable(
                f"cannot reach the Docker engine at {address}: {explain(error)}"
            ) from None
        return cls(client, address)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connection."""
        self._client.close()

    def info(self) -> dict[str, Any]:
        """`docker info`."""
        with self._mapped("docker info"):
            info: dict[str, Any] = self._client.info()
        return info

    def inspect_image(self, reference: str) -> dict[str, Any]:
        """`docker image inspect`; ImageMissing when the engine does not hold it."""
        with self._mapped(f"inspect {reference}"):
            attrs: dict[str, Any] = self._client.api.inspect_image(reference)
        return attrs

    def export_image(self, reference: str, chunk_size: int) -> Iterator[bytes]:
        """`docker save` of one image, as chunks of its tar stream."""
        with self._mapped(f"export {reference}"):
            yield from self._client.api.get_image(reference, chunk_size=chunk_size)

    def build(self, **options: Any) -> Iterator[dict[str, Any]]:
        """The engine's (classic) builder; yields its decoded progress events."""
        with self._mapped("build"):
            yield from self._client.api.build(decode=True, **options)

    def tag(self, image_id: str, repository: str, tag: str) -> None:
        """`docker tag`."""
        with self._mapped(f"tag {repository}:{tag}"):
            self._client.api.tag(image_id, repository, tag)

    def push(
        self, repository: str, tag: str, auth: Mapping[str, str] | None
    ) -> Iterator[dict[str, Any]]:
        """`docker push`; yields the engine's decoded progress events (errors are events)."""
        with self._mapped(f"push {repository}:{tag}"):
            yield from self._client.api.push(
                repository,
                tag=tag,
                stream=True,
                decode=True,
                auth_config=dict(auth) if auth else None,
            )

    def pull(self, reference: str) -> None:
        """`docker pull`."""
        with self._mapped(f"pull {reference}"):
            self._client.images.pull(reference)

    def running_containers(self) -> list[dict[str, Any]]:
        """`docker inspect` of every running container."""
        import docker

        with self._mapped("list the running containers"):
            ids = [summary["Id"] for summary in self._client.api.containers()]
            found = []
            for container_id in ids:
                try:
                    found.append(self._client.api.inspect_container(container_id))
                except docker.errors.NotFound:  # gone between the listing and the inspect
                    continue
            return found

    def exec(
        self, container_id: str, argv: Sequence[str], environment: Mapping[str, str]
    ) -> tuple[int, str]:
        """`docker exec` in a running container: exit code (-1 when the engine gave none)
        and stdout and stderr together. The connection's timeout bounds it."""
        with self._mapped(f"exec in {container_id[:12]}"):
            created = self._client.api.exec_create(
                container_id, list(argv), environment=dict(environment)
            )
            output: bytes = self._client.api.exec_start(created["Id"])
            code = self._client.api.exec_inspect(created["Id"]).get("ExitCode")
        return (-1 if code is None else int(code)), output.decode("utf-8", "replace")

    def create_container(
        self,
        image: str,
        *,
        entrypoint: Sequence[str] | None = None,
        command: Sequence[str] | None = None,
        environment: Mapping[str, str],
        gpus: GpuRequest | None = None,
        network_mode: str = "none",
        options: ContainerOptions | None = None,
    ) -> Container:
        """`docker create`, with GPUs requested as `--gpus` would request them.

        `entrypoint`/`command` None keep the image's own; `options` add what a long-running
        service needs (a published port, mounts, labels, limits).
        """
        from docker.types import DeviceRequest

        requests = []
        if gpus is not None:
            requests.append(
                DeviceRequest(device_ids=list(gpus.device_ids), capabilities=[["gpu"]])
                if gpus.device_ids
                else DeviceRequest(count=-1, capabilities=[["gpu"]])
            )
        extra = (options or ContainerOptions()).sdk_arguments()
        with self._mapped(f"create a container of {image}"):
            container = self._client.containers.create(
                image,
                entrypoint=None if entrypoint is None else list(entrypoint),
                command=None if command is None else list(command),
                device_requests=requests,
                network_mode=network_mode,
                environment=dict(environment),
                **extra,
            )
        return Container(container, self)

    def _mapped(self, what: str) -> contextlib.AbstractContextManager[None]:
        return _mapped(what, self.address)


class Container:
    """A created container; `remove()` always, whatever happened."""

    def __init__(self, container: Any, engine: Engine) -> None:
        self._container = container
        self._engine = engine

    def start(self) -> None:
        """`docker start`."""
        with self._engine._mapped("start the container"):
            self._container.start()

    def wait(self, timeout: float) -> int:
        """Wait for the container to exit; its exit code (-1 when the engine gave none)."""
        with self._engine._mapped("wait for the container"):
            status = self._container.wait(timeout=timeout)
        return int(status.get("StatusCode", -1))

    def logs(self, timestamps: bool = False) -> str:
        """Its stdout and stderr so far; with `timestamps`, each line starts with the engine's
        RFC 3339 time of the line."""
        with self._engine._mapped("read the container's logs"):
            data: bytes = self._container.logs(stdout=True, stderr=True, timestamps=timestamps)
        return data.decode("utf-8", "replace")

    def inspect(self) -> dict[str, Any]:
        """`docker inspect` of the container, read now."""
        with self._engine._mapped("inspect the container"):
            self._container.reload()
        attrs: dict[str, Any] = self._container.attrs
        return attrs

    def remove(self) -> None:
        """`docker rm -f`."""
        with self._engine._mapped("remove the container"):
            self._container.remove(force=True)


@contextlib.contextmanager
def _mapped(what: str, address: str) -> Iterator[None]:
    """Turn the SDK's exceptions raised inside the block into ours."""
    import docker
    import requests

    try:
        yield
    except docker.errors.ImageNotFound as error:
        raise ImageMissing(explain(error)) from None
    except docker.errors.APIError as error:
        raise EngineRefused(explain(error)) from None
    except (docker.errors.DockerException, requests.RequestException) as error:
        raise DockerUnavailable(
            f"Docker engine at {address}: {what} failed: {explain(error)}"
        ) from None
