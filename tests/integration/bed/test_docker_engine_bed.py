"""The bed Docker engine is private, answers its API and may push to 127.0.0.1 over HTTP."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bed.docker_engine import DockerEngine
from bed.images import FileSpec, build_scratch_image
from bed.process import require_binary
from bed.registry import Registry

pytestmark = pytest.mark.integration


def test_engine_answers_on_its_own_socket(docker_engine: DockerEngine) -> None:
    assert docker_engine.host.startswith("unix:///tmp/")
    assert len(docker_engine.host) - len("unix://") < 108
    info = docker_engine.client.info()
    assert info["Driver"] == "vfs"
    assert info["DockerRootDir"].startswith(str(docker_engine.root))


def test_engine_treats_loopback_registries_as_insecure(docker_engine: DockerEngine) -> None:
    insecure = docker_engine.client.info()["RegistryConfig"]["InsecureRegistryCIDRs"]
    assert "127.0.0.0/8" in insecure


def test_docker_cli_reaches_engine_through_env(docker_engine: DockerEngine) -> None:
    result = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"],
        env=docker_engine.cli_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == docker_engine.client.version()["Version"]


def test_cli_logs_in_and_pushes_to_basic_auth_registry(
    docker_engine: DockerEngine, registry_basic_auth: Registry
) -> None:
    reference = registry_basic_auth.ref("bed/cli-push", "1")
    build_scratch_image(docker_engine, reference, [{"hello": b"hello"}])
    env = docker_engine.cli_env()
    assert registry_basic_auth.password is not None
    subprocess.run(
        [
            "docker",
            "login",
            "-u",
            str(registry_basic_auth.username),
            "--password-stdin",
            registry_basic_auth.host,
        ],
        input=registry_basic_auth.password,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    config = json.loads((Path(env["DOCKER_CONFIG"]) / "config.json").read_text())
    assert registry_basic_auth.host in config["auths"]
    try:
        pushed = subprocess.run(
            ["docker", "push", reference], env=env, capture_output=True, text=True, check=True
        )
    finally:
        # The engine is shared by the session: leave no credentials for other tests.
        subprocess.run(["docker", "logout", registry_basic_auth.host], env=env, check=True)
    assert "digest: sha256:" in pushed.stdout


def test_engine_runs_a_container_without_network(
    docker_engine: DockerEngine, tmp_path: Path
) -> None:
    gcc = require_binary("gcc")
    source = tmp_path / "hello.c"
    source.write_text('#include <stdio.h>\nint main(void) { puts("hello from the bed"); }\n')
    subprocess.run([gcc, "-static", "-Os", "-o", str(tmp_path / "hello"), str(source)], check=True)
    binary = FileSpec((tmp_path / "hello").read_bytes(), mode=0o755)
    build_scratch_image(
        docker_engine, "bed/hello:1", [{"hello": binary}], extra_lines=['CMD ["/hello"]']
    )
    output = docker_engine.client.containers.run("bed/hello:1", network_mode="none", remove=True)
    assert output == b"hello from the bed\n"
