"""A registry, proxy or WAF that quotes the request's `Authorization` header in an error body
never makes gpuship print a credential: not on stderr, not in the `::error` annotation, not in
a report (text, JSON, SARIF, Markdown), a report file, the job summary or a step output. And
under GitHub Actions every credential gpuship sends is masked (`::add-mask::`) before it is
sent: the Basic value a password becomes, a token a token service hands out, a password found
only in Docker's config (none of which the runner knows of).

The real docker-registry of the bed topology (basic auth, and token auth with its token service
on another port), behind `bed.faults` answering every request that carries a credential with
an error body quoting it (`echo`, in each of the styles `bed/faults.py` lists); the credential
ledger stays clean. Before the fix stderr held `Authorization: Basic <base64 of user:password>`.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bed import faults
from bed.oci import make_image, push
from bed.topology import RegistryTopology, TopologyRegistry
from gpuship.cli.main import main
from workflow_commands import commands_in, foreign_commands

pytestmark = pytest.mark.integration

FAST = {"GPUSHIP_REGISTRIES__ATTEMPTS": "1", "GPUSHIP_REGISTRIES__BACKOFF": "0.01"}


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str
    files: dict[str, str]

    @property
    def everything(self) -> str:
        """All it wrote but its `add-mask` commands (which the runner never shows)."""
        text = "\n".join([self.stdout, self.stderr, *self.files.values()])
        return "\n".join(line for line in text.splitlines() if not line.startswith("::add-mask::"))


def _gpuship(tmp_path: Path, argv: list[str], environ: dict[str, str]) -> Run:
    """`gpuship ARGV` under GitHub Actions, with a job summary, step outputs, `--output` JSON
    and `--sarif` files; returns all it wrote."""
    files = {
        name: tmp_path / name for name in ("summary.md", "outputs", "report.json", "report.sarif")
    }
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(files["summary.md"]),
        "GITHUB_OUTPUT": str(files["outputs"]),
        **FAST,
        **environ,
    }
    argv = [*argv, "--output", str(files["report.json"]), "--sarif", str(files["report.sarif"])]
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main([*argv, "--format", "json", "--deadline", "30"], env, stdout, stderr)
    written = {name: path.read_text() for name, path in files.items() if path.exists()}
    return Run(code, stdout.getvalue(), stderr.getvalue(), written)


def _basic(registry: TopologyRegistry) -> str:
    return base64.b64encode(f"{registry.username}:{registry.password}".encode()).decode()


def _masked(stderr: str) -> set[str]:
    return {value for name, value in commands_in(stderr) if name == "add-mask"}


@pytest.fixture
def echoing(registry_topology: RegistryTopology) -> Iterator[dict[str, faults.FaultProxy]]:
    """A proxy per registry (basic, push) that echoes every request carrying a credential,
    one per style: {"<registry>-<style>": proxy}."""
    proxies = {
        f"{registry.name}-{style}": faults.start(
            registry.host, hook=lambda *_: "echo", echo_style=style
        )
        for registry in (registry_topology.basic, registry_topology.push)
        for style in faults.ECHO_STYLES
    }
    yield proxies
    for proxy in proxies.values():
        proxy.stop()


@pytest.mark.parametrize("style", faults.ECHO_STYLES)
@pytest.mark.parametrize("source", ["environment", "docker-config"])
def test_a_password_echoed_in_an_error_body_is_hidden_and_masked(
    tmp_path: Path,
    registry_topology: RegistryTopology,
    echoing: dict[str, faults.FaultProxy],
    style: str,
    source: str,
):
    registry = registry_topology.basic
    proxy = echoing[f"basic-{style}"]
    if source == "environment":
        environ = {
            "GPUSHIP_REGISTRY": proxy.host,
            "GPUSHIP_REGISTRY_USER": str(registry.username),
            "GPUSHIP_REGISTRY_PASSWORD": str(registry.password),
        }
    else:  # a login only Docker's config holds: the runner has never heard of it
        config = tmp_path / "docker"
        config.mkdir()
        auths = {"auths": {proxy.host: {"auth": _basic(registry)}}}
        (config / "config.json").write_text(json.dumps(auths))
        environ = {"DOCKER_CONFIG": str(config)}
    mark = registry_topology.ledger.mark()
    run = _gpuship(tmp_path, ["inspect", f"{proxy.host}/echo/basic:v1"], environ)
    assert run.code == 2, run.stderr
    assert any(entry.fault == "echo" and entry.applied for entry in proxy.log)
    # The echo reached the message (the test sees what it tests), with the credential hidden.
    assert "HTTP 403" in run.stderr and "***" in run.stderr, run.stderr
    for secret in (str(registry.password), _basic(registry)):
        assert secret not in run.everything
    # Masked before it was sent: the Basic value and the password, whatever their source.
    assert {_basic(registry), str(registry.password)} <= _masked(run.stderr)
    assert [name for name, _ in commands_in(run.stdout)] == ["error"]
    assert foreign_commands(run.stdout) == []
    assert registry_topology.ledger.presented(registry.host, mark) == set()  # none got through
    assert registry_topology.violations() == []


@pytest.mark.parametrize("style", faults.ECHO_STYLES)
def test_a_bearer_token_echoed_in_an_error_body_is_hidden_and_masked(
    tmp_path: Path,
    registry_topology: RegistryTopology,
    echoing: dict[str, faults.FaultProxy],
    style: str,
):
    registry = registry_topology.push
    proxy = echoing[f"push-{style}"]
    environ = {**registry.credential_env(), "GPUSHIP_REGISTRY": proxy.host}
    issued_before = set(registry_topology.ledger.tokens)
    run = _gpuship(tmp_path, ["inspect", f"{proxy.host}/echo/token:v1"], environ)
    assert run.code == 2, run.stderr
    tokens = set(registry_topology.ledger.tokens) - issued_before
    assert tokens, "the token service issued no token"
    assert "HTTP 403" in run.stderr and "***" in run.stderr, run.stderr
    for secret in (*tokens, str(registry.password), _basic(registry)):
        assert secret not in run.everything
    assert tokens <= _masked(run.stderr)
    assert registry_topology.violations() == []


def test_a_credential_echoed_into_a_release_report_is_hidden_in_every_file(
    tmp_path: Path, registry_topology: RegistryTopology
):
    """promote reports a refused tag write in its report (exit 1): the JSON, SARIF, Markdown
    summary and step outputs quote the registry's answer, which quotes the credential."""
    registry = registry_topology.basic
    image = make_image([{"app": b"echoed release"}])
    digest = push(registry.upstream.url, "echo/release", image, tag="candidate", auth=registry.auth)

    def echo_tag_writes(_index: int, method: str, path: str) -> str | None:
        return "echo" if method == "PUT" and path.endswith("/manifests/1.0.0") else None

    with faults.start(registry.host, hook=echo_tag_writes, echo_style="go-map") as proxy:
        environ = {
            "GPUSHIP_REGISTRY": proxy.host,
            "GPUSHIP_REGISTRY_USER": str(registry.username),
            "GPUSHIP_REGISTRY_PASSWORD": str(registry.password),
        }
        source = f"{proxy.host}/echo/release@{digest}"
        run = _gpuship(tmp_path, ["promote", source, "--tag", "1.0.0"], environ)
    assert run.code == 1, run.stderr
    assert any(entry.fault == "echo" and entry.applied for entry in proxy.log)
    for name in ("report.json", "report.sarif", "summary.md", "outputs"):
        assert name in run.files, name
    assert "Authorization:[Basic ***]" in run.files["report.json"], run.files["report.json"]
    for secret in (str(registry.password), _basic(registry)):
        assert secret not in run.everything
    assert registry_topology.violations() == []
