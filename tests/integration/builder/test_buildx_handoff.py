"""What `gpuship build --builder buildx` hands to `docker buildx build`, observed while it runs.

BuildKit cannot run on these machines, so `docker` here is a recording stand-in (the only mock
in the build tests, and said so): while gpuship runs it, the stand-in records its argv, its
DOCKER_CONFIG (config.json and what is linked in) and the secret files it was pointed at, then
writes the metadata file buildx would. Everything up to that process boundary is gpuship's real
code path: the CLI, the plan, the scoped DOCKER_CONFIG, the secret files and their clean-up.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bed.topology import RegistryTopology

pytestmark = pytest.mark.integration

DIGEST = "sha256:" + "b" * 64
STANDIN = f"""#!{sys.executable}
import json, os, stat, sys
from pathlib import Path

args = sys.argv[1:]
if args[:2] == ["buildx", "version"]:
    print("github.com/docker/buildx v0.0.0-standin")
    sys.exit(0)
config_dir = Path(os.environ["DOCKER_CONFIG"])
secrets = {{}}
for index, arg in enumerate(args):
    if arg == "--secret" and ",src=" in args[index + 1]:
        path = Path(args[index + 1].split(",src=", 1)[1])
        if path.is_absolute():
            secrets[args[index + 1]] = {{
                "content": path.read_text(),
                "mode": stat.S_IMODE(path.stat().st_mode),
            }}
record = {{
    "argv": args,
    "docker_config": str(config_dir),
    "config_mode": stat.S_IMODE(config_dir.stat().st_mode),
    "config_json": json.loads((config_dir / "config.json").read_text()),
    "config_json_mode": stat.S_IMODE((config_dir / "config.json").stat().st_mode),
    "linked": sorted(p.name for p in config_dir.iterdir() if p.is_symlink()),
    "secrets": secrets,
    "hf_token_in_env": os.environ.get("HF_TOKEN"),
}}
Path(os.environ["STANDIN_RECORD"]).write_text(json.dumps(record))
metadata = Path(args[args.index("--metadata-file") + 1])
metadata.write_text(json.dumps({{"containerimage.digest": "{DIGEST}"}}))
"""


ROOT = Path(__file__).resolve().parents[3]


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def standin_bin(tmp_path: Path) -> Path:
    """A directory whose `docker` is the recording stand-in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(STANDIN)
    docker.chmod(docker.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def test_buildx_gets_a_scoped_config_secret_files_and_the_exact_command(
    registry_topology: RegistryTopology, tmp_path: Path, standin_bin: Path
) -> None:
    topology = registry_topology
    bin_dir = standin_bin
    # The user's own docker config: logins to several registries, a buildx builder.
    user_config = tmp_path / "user-docker"
    (user_config / "buildx").mkdir(parents=True)
    (user_config / "config.json").write_text(
        json.dumps(
            {
                "auths": {
                    topology.basic.host: {"auth": topology.basic.docker_auth()},
                    "prod.example.com": {"auth": b64("prod:prod-secret")},
                }
            }
        )
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "Dockerfile").write_text(
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n"
        "RUN --mount=type=secret,id=hf_token,env=HF_TOKEN --mount=type=secret,id=pip_conf true\n"
    )
    base = f"{topology.public.host}/flow/cuda-base:12.6-runtime@sha256:" + "a" * 64
    cell = {
        "id": "app-cuda12.6",
        "image": "app",
        "repository": f"{topology.push.host}/handoff/app",
        "tags": [f"{topology.push.host}/handoff/app:cu126"],
        "build_args": {"BASE_IMAGE": base},
        "cache_from": f"type=registry,ref={topology.push.host}/handoff/app-buildcache:app-cuda12.6",
        "cache_to": (
            f"type=registry,ref={topology.push.host}/handoff/app-buildcache:app-cuda12.6,"
            "mode=max,image-manifest=true,oci-mediatypes=true,ignore-error=true"
        ),
        "platforms": ["linux/amd64", "linux/arm64"],
    }
    record_file = tmp_path / "record.json"
    environ = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "DOCKER_CONFIG": str(user_config),
        "GPUSHIP_REGISTRY_AUTH": json.dumps({topology.push.host: topology.push.auth_entry()}),
        "GPUSHIP_BUILD_SECRETS": "pip_conf=index-url=https://bot:pw@pypi.internal/simple\n",
        "HF_TOKEN": "hf_value_in_env",
        "STANDIN_RECORD": str(record_file),
    }
    done = subprocess.run(
        [
            sys.executable, "-m", "gpuship", "--format", "json", "build",
            "--cell", json.dumps(cell), "--builder", "buildx", "--commit", "c" * 40,
            "--secret", "id=hf_token,env=HF_TOKEN", "--ssh", "default",
            "--provenance", "mode=max", "--sbom", "true", "--no-image-checks",
        ],
        cwd=project, env=environ, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["result"]["digest"] == DIGEST
    assert report["result"]["secrets"] == ["hf_token", "pip_conf"]
    record = json.loads(record_file.read_text())
    # The credentials: the push (and cache) registry's own, nothing for the anonymous base
    # registry, none of the user's other logins.
    push_auth = b64(f"{topology.push.username}:{topology.push.password}")
    assert record["config_json"] == {"auths": {topology.push.host: {"auth": push_auth}}}
    assert record["config_mode"] == 0o700 and record["config_json_mode"] == 0o600
    assert record["linked"] == ["buildx"]
    # The secret: a private file named on the command line, its value nowhere on it.
    argv: list[str] = record["argv"]
    (file_spec,) = [s for s in record["secrets"] if s.startswith("id=pip_conf,")]
    assert record["secrets"][file_spec] == {
        "content": "index-url=https://bot:pw@pypi.internal/simple",
        "mode": 0o600,
    }
    assert "pypi.internal" not in " ".join(argv)
    assert record["hf_token_in_env"] == "hf_value_in_env"
    assert "hf_value_in_env" not in " ".join(argv)
    scoped = record["docker_config"]
    secret_dir = Path(file_spec.split(",src=", 1)[1]).parent
    labels = {argv[i + 1] for i, arg in enumerate(argv) if arg == "--label"}
    assert {label.split("=", 1)[0] for label in labels} == {
        "org.opencontainers.image.created",
        "org.opencontainers.image.revision",
    }
    assert f"org.opencontainers.image.revision={'c' * 40}" in labels
    without_labels = [
        arg
        for i, arg in enumerate(argv)
        if arg != "--label" and (i == 0 or argv[i - 1] != "--label")
    ]
    assert without_labels == [
        "buildx", "build", "--progress=plain", "--file", str(project / "Dockerfile"),
        "--build-arg", f"BASE_IMAGE={base}",
        "--tag", f"{topology.push.host}/handoff/app:sha-ccccccc-app-cuda12.6",
        "--tag", f"{topology.push.host}/handoff/app:cu126",
        "--platform", "linux/amd64,linux/arm64",
        "--cache-from", cell["cache_from"],
        "--cache-to", cell["cache_to"],
        "--secret", "id=hf_token,env=HF_TOKEN",
        "--secret", file_spec,
        "--ssh", "default",
        "--provenance=mode=max",
        "--sbom=true",
        "--metadata-file", str(secret_dir / "metadata.json"),
        "--push",
        str(project),
    ]  # fmt: skip
    # Afterwards nothing of it is left: not the config with the credential, not the secrets.
    assert not Path(scoped).exists()
    assert not secret_dir.exists()


def test_build_action_inputs_become_buildkit_options(tmp_path: Path, standin_bin: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "Dockerfile").write_text("FROM scratch\n")
    (project / "netrc").write_text("machine pypi.internal login bot password pw\n")
    record_file = tmp_path / "record.json"
    cell = {"id": "app-x", "image": "app", "repository": "r.example.com/acme/app"}
    environ = {
        "PATH": f"{standin_bin}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "DOCKER_CONFIG": str(tmp_path / "no-config"),
        "GPUSHIP": str(Path(sys.executable).with_name("gpuship")),
        "STANDIN_RECORD": str(record_file),
        "HF_TOKEN": "hf_value",
        "GPUSHIP_BUILD_SECRETS": "pip_conf=value-1\n",
        "INPUT_CELL": json.dumps(cell),
        "INPUT_IMAGE": "", "INPUT_SET": "", "INPUT_PUSH": "true", "INPUT_COMMIT": "d" * 40,
        "INPUT_BUILDER": "buildx", "INPUT_NETWORK": "", "INPUT_IMAGE_CHECKS": "false",
        "INPUT_LOCK": "", "INPUT_CONFIG": "", "INPUT_FAIL_ON": "",
        "INPUT_SECRET_ENVS": "hf_token=HF_TOKEN",
        "INPUT_SECRET_FILES": "netrc=netrc",
        "INPUT_SSH": "default",
        "INPUT_PROVENANCE": "mode=max",
        "INPUT_SBOM": "true",
    }  # fmt: skip
    done = subprocess.run(
        ["bash", str(ROOT / "actions" / "build" / "build.sh")],
        cwd=project, env=environ, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    argv = json.loads(record_file.read_text())["argv"]
    pairs = set(itertools.pairwise(argv))
    assert ("--secret", "id=hf_token,env=HF_TOKEN") in pairs
    assert ("--secret", "id=netrc,src=netrc") in pairs
    assert any(a == "--secret" and b.startswith("id=pip_conf,src=/") for a, b in pairs)
    assert ("--ssh", "default") in pairs
    assert "--provenance=mode=max" in argv and "--sbom=true" in argv
    assert "value-1" not in " ".join(argv) and "hf_value" not in " ".join(argv)
