"""What a registry says never becomes a workflow command or shows a credential: an error body
holding `::add-mask::`, `::stop-commands::` and `##[set-output ...]` (the real docker-registry
behind `bed.faults`, its 500s answered with that body), and a redirect to a URL that carries
credentials. Commands are found as GitHub's runner finds them (`workflow_commands.py`)."""

from __future__ import annotations

import io
import socket

import pytest

from bed import faults
from bed.oci import make_image, push
from bed.registry import Registry
from bed.servers import answering
from gpuship.cli.main import main
from workflow_commands import commands_in, foreign_commands

pytestmark = pytest.mark.integration

HOSTILE_BODY = (
    b"bad gateway\n::add-mask::gpuship\n  ::stop-commands::pwned\r"
    b"::error file=x::pwned\n##[set-output name=failed]false\n"
)
ENVIRON = {
    "GITHUB_ACTIONS": "true",
    "GPUSHIP_REGISTRIES__ATTEMPTS": "2",
    "GPUSHIP_REGISTRIES__BACKOFF": "0.01",
}


def _gpuship(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main([*argv, "--deadline", "20"], environ=ENVIRON, stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.mark.parametrize(
    "command", [["inspect", "{host}/log/app:v1"], ["history", "{host}/log/app"]]
)
def test_a_registry_error_body_sends_no_command(registry: Registry, command: list[str]):
    push(registry.url, "log/app", make_image([{"a": b"a"}]), tag="v1")
    with faults.start(
        registry.host, dict.fromkeys(range(50), "502"), error_body=HOSTILE_BODY
    ) as proxy:
        code, stdout, stderr = _gpuship(*[part.format(host=proxy.host) for part in command])
    assert code == 3, stderr
    # The body is quoted, on the error's one line, with nothing in it the runner obeys.
    assert "add-mask" in stderr and stderr.count("\n") == 1, stderr
    assert commands_in(stderr) == []
    assert [name for name, _ in commands_in(stdout)] == ["error"]
    assert foreign_commands(stdout) == []


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_redirect_to_a_url_with_credentials_is_named_without_them():
    location = f"http://storage:s3cr3t-t0ken@127.0.0.1:{_closed_port()}/blob?sig=1"
    redirect = (
        f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\n"
        "Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    with answering(redirect.encode()) as host:
        code, stdout, stderr = _gpuship("inspect", f"{host}/log/app:v1")
    assert code == 3, stderr
    assert "storage:***@127.0.0.1" in stderr, stderr
    assert "s3cr3t-t0ken" not in stdout + stderr
