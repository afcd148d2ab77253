"""What a build hands its builder: each registry's own credential, a temporary DOCKER_CONFIG
holding nothing else, and BuildKit secrets by id (never by value)."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import pytest

from gpuship.builder.plan import BuildPlan
from gpuship.builder.registry_auth import (
    DOCKER_HUB_KEY,
    engine_auth,
    scoped_docker_config,
)
from gpuship.builder.secrets import check_secret_spec, check_ssh_spec, secret_ids, secret_values
from gpuship.compat.cell import cell_from_dict
from gpuship.errors import InputError
from gpuship.gha import mask_commands
from gpuship.registry.credentials import CredentialStore


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def user_config(tmp_path: Path) -> Path:
    """A user's ~/.docker: logins to five registries, a buildx builder, a CLI plugin."""
    directory = tmp_path / "home-docker"
    (directory / "buildx" / "instances").mkdir(parents=True)
    (directory / "buildx" / "instances" / "ci").write_text('{"Name": "ci"}')
    (directory / "cli-plugins").mkdir()
    (directory / "cli-plugins" / "docker-buildx").write_text("#!/bin/sh\n")
    (directory / "config.json").write_text(
        json.dumps(
            {
                "auths": {
                    "push.example.com": {"auth": b64("pusher:push-pw")},
                    "prod.example.com": {"auth": b64("prod:prod-pw")},
                    "cache.example.com": {"auth": b64("cacher:cache-pw")},
                    DOCKER_HUB_KEY: {"auth": b64("hub:hub-pw")},
                    "ids.example.com": {"identitytoken": "refresh-1"},
                },
                "currentContext": "ci-context",
            }
        )
    )
    return directory


def test_buildx_config_holds_only_the_builds_registries(user_config: Path) -> None:
    environ = {"DOCKER_CONFIG": str(user_config), "PATH": "/usr/bin"}
    registries = ["push.example.com", "cache.example.com", "docker.io", "public.example.com"]
    with scoped_docker_config(registries, environ) as scoped:
        directory = Path(scoped["DOCKER_CONFIG"])
        assert directory != user_config and scoped["PATH"] == "/usr/bin"
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        config_file = directory / "config.json"
        assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
        assert json.loads(config_file.read_text()) == {
            "auths": {
                "push.example.com": {"auth": b64("pusher:push-pw")},
                "cache.example.com": {"auth": b64("cacher:cache-pw")},
                DOCKER_HUB_KEY: {"auth": b64("hub:hub-pw")},
            },
            "currentContext": "ci-context",
        }
        # The user's builders and plugins are there, the other logins are not.
        assert (directory / "buildx" / "instances" / "ci").read_text() == '{"Name": "ci"}'
        assert (directory / "cli-plugins" / "docker-buildx").exists()
        assert "prod-pw" not in config_file.read_text()
    assert not directory.exists()


def test_explicit_credentials_and_github_token_reach_buildx_scoped(tmp_path: Path) -> None:
    environ = {
        "DOCKER_CONFIG": str(tmp_path / "none"),
        "GPUSHIP_REGISTRY_AUTH": json.dumps(
            {"push.example.com": {"username": "bot", "password": "bot-pw"}}
        ),
        "GITHUB_TOKEN": "ghs_token",
        "GITHUB_ACTOR": "octocat",
    }
    with scoped_docker_config(["push.example.com", "ghcr.io", "quay.io"], environ) as scoped:
        auths = json.loads((Path(scoped["DOCKER_CONFIG"]) / "config.json").read_text())["auths"]
    assert auths == {
        "push.example.com": {"auth": b64("bot:bot-pw")},
        "ghcr.io": {"auth": b64("octocat:ghs_token")},
    }


def test_engine_push_auth_is_the_registrys_own(user_config: Path) -> None:
    store = CredentialStore({"DOCKER_CONFIG": str(user_config)})
    assert engine_auth(store.find("push.example.com")) == {
        "username": "pusher",
        "password": "push-pw",
        "serveraddress": "push.example.com",
    }
    assert engine_auth(store.find("docker.io")) == {
        "username": "hub",
        "password": "hub-pw",
        "serveraddress": DOCKER_HUB_KEY,
    }
    assert engine_auth(store.find("ids.example.com")) == {
        "identitytoken": "refresh-1",
        "serveraddress": "ids.example.com",
    }
    assert engine_auth(store.find("elsewhere.example.com")) is None


def test_plan_lists_push_cache_and_base_registries() -> None:
    cell = cell_from_dict(
        {
            "id": "app-cuda12.6",
            "image": "app",
            "repository": "push.example.com/acme/app",
            "build_args": {"BASE_IMAGE": "nvcr.io/nvidia/cuda:12.6.3-runtime@sha256:" + "a" * 64},
            "cache_from": "type=registry,ref=cache.example.com/acme/app-buildcache:app-cuda12.6",
            "cache_to": "type=registry,ref=cache.example.com/acme/app-buildcache:app-cuda12.6",
        }
    )
    plan = BuildPlan(cell, Path(), "c" * 40, "2026-01-01T00:00:00Z", True, "buildx", None, False)
    assert plan.registries() == ["push.example.com", "nvcr.io", "cache.example.com"]
    gha = cell.model_copy(update={"cache_from": "type=gha,scope=app", "build_args": {}})
    assert BuildPlan(gha, Path(), None, "", True, "buildx", None, False).registries() == [
        "push.example.com"
    ]


def test_secret_inputs(tmp_path: Path) -> None:
    (tmp_path / "netrc").write_text("machine x")
    environ = {"HF_TOKEN": "hf_secret_value"}
    assert check_secret_spec("id=hf,env=HF_TOKEN", environ, tmp_path) == "id=hf,env=HF_TOKEN"
    assert check_secret_spec("type=file,id=netrc,src=netrc", environ, tmp_path)
    for spec, message in (
        ("id=hf,env=MISSING", "MISSING is not set"),
        ("id=n,src=nope", "nope does not exist"),
        ("id=x", "exactly one of"),
        ("env=HF_TOKEN", "needs id="),
        ("hf_secret_value", "buildx syntax"),
    ):
        with pytest.raises(InputError, match=message) as raised:
            check_secret_spec(spec, environ, tmp_path)
        assert "hf_secret_value" not in str(raised.value)
    values = secret_values({"GPUSHIP_BUILD_SECRETS": "pip=a=b\n\nnpm=token-2\n"})
    assert values == {"pip": "a=b", "npm": "token-2"}
    with pytest.raises(InputError, match="line 2"):
        secret_values({"GPUSHIP_BUILD_SECRETS": "a=1\nnot a secret line"})
    with pytest.raises(InputError, match="given twice"):
        secret_ids(["id=pip,env=X"], {"pip": "v"})
    assert check_ssh_spec("default") == "default"
    with pytest.raises(InputError):
        check_ssh_spec("bad id=/x")


def test_build_secret_values_are_masked() -> None:
    lines = mask_commands(
        {"GITHUB_ACTIONS": "true", "GPUSHIP_BUILD_SECRETS": "pip=s3cr3t=x\nnpm=tok\n"}
    )
    assert lines == ["::add-mask::s3cr3t=x", "::add-mask::tok"]
