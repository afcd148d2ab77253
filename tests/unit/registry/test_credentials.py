"""Credentials scoped per registry host, and the realm rule, on data."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from gpuship.errors import InputError
from gpuship.gha import mask_commands
from gpuship.registry.auth import realm_address_verdict, realm_verdict
from gpuship.registry.credentials import Credentials, CredentialStore, explicit_credentials
from gpuship.registry.origin import Origin, is_internal, may_carry_credentials

NO_CONFIG = {"DOCKER_CONFIG": "/nonexistent-gpuship-test"}


def store(**environ: str) -> CredentialStore:
    return CredentialStore({**NO_CONFIG, **environ})


def test_an_explicit_credential_goes_to_its_registry_only():
    found = store(
        GPUSHIP_REGISTRY="registry.example.com:5000",
        GPUSHIP_REGISTRY_USER="u",
        GPUSHIP_REGISTRY_PASSWORD="p",
    )
    mine = found.find("registry.example.com:5000")
    assert mine is not None
    assert (mine.username, mine.password, mine.registry) == ("u", "p", "registry.example.com:5000")
    for other in ("docker.io", "nvcr.io", "ghcr.io", "registry.example.com", "127.0.0.1:5000"):
        assert found.find(other) is None, other


def test_a_credential_without_its_registry_is_refused():
    with pytest.raises(InputError, match="GPUSHIP_REGISTRY names no registry"):
        store(GPUSHIP_REGISTRY_USER="u", GPUSHIP_REGISTRY_PASSWORD="p")
    with pytest.raises(InputError, match="both"):
        store(GPUSHIP_REGISTRY="ghcr.io", GPUSHIP_REGISTRY_USER="u")


def test_github_token_is_for_ghcr_only_and_an_explicit_ghcr_credential_wins():
    found = store(GITHUB_TOKEN="t", GITHUB_ACTOR="me")
    ghcr = found.find("ghcr.io")
    assert ghcr is not None
    assert (ghcr.username, ghcr.password, ghcr.source) == ("me", "t", "GITHUB_TOKEN")
    assert found.find("docker.io") is None
    assert found.find("quay.io") is None
    explicit = store(
        GITHUB_TOKEN="t",
        GPUSHIP_REGISTRY="ghcr.io",
        GPUSHIP_REGISTRY_USER="bot",
        GPUSHIP_REGISTRY_PASSWORD="pat",
    ).find("ghcr.io")
    assert explicit is not None
    assert (explicit.username, explicit.password) == ("bot", "pat")


def test_registry_auth_json_keys_normalise_like_docker_config():
    auth = base64.b64encode(b"hub:pw").decode()
    document = {
        "https://index.docker.io/v1/": {"auth": auth},
        "Quay.IO": {"username": "q", "password": "qp"},
        "r.example.com": {"identitytoken": "refresh-me"},
        "gitlab-registry.example.com": {
            "username": "g",
            "password": "gp",
            "token-services": ["https://gitlab.example.com/jwt/auth"],
        },
    }
    found = explicit_credentials({"GPUSHIP_REGISTRY_AUTH": json.dumps(document)})
    assert sorted(found) == [
        "docker.io",
        "gitlab-registry.example.com",
        "quay.io",
        "r.example.com",
    ]
    assert (found["docker.io"].username, found["docker.io"].password) == ("hub", "pw")
    assert found["r.example.com"].identity_token == "refresh-me"
    assert found["gitlab-registry.example.com"].token_services == (
        Origin("https", "gitlab.example.com", 443),
    )
    pasted = explicit_credentials({"GPUSHIP_REGISTRY_AUTH": json.dumps({"auths": document})})
    assert sorted(pasted) == sorted(found)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not JSON"),
        ('["ghcr.io"]', "JSON object keyed by registry host"),
        ('{"ghcr.io": {"username": "u", "pasword": "SECRET-1"}}', "invalid pasword"),
        ('{"ghcr.io": {"auth": "!!!SECRET-2"}}', "'auth' is not base64"),
        ('{"ghcr.io": {"username": "u"}}', "give both"),
        ('{"https://ghcr.io/": {}, "ghcr.io": {}}', "twice"),
        ('{"not a host!": {}}', "is not a registry host"),
        ('{"r.io": {"token-services": ["ftp://x"]}}', "not an http"),
    ],
)
def test_bad_registry_auth_is_a_clear_error_without_the_secret(text: str, message: str):
    with pytest.raises(InputError, match=message) as raised:
        explicit_credentials({"GPUSHIP_REGISTRY_AUTH": text})
    assert "SECRET" not in str(raised.value)


def test_the_same_registry_twice_is_ambiguous():
    with pytest.raises(InputError, match="two explicit credentials"):
        explicit_credentials(
            {
                "GPUSHIP_REGISTRY_AUTH": '{"ghcr.io": {"username": "a", "password": "b"}}',
                "GPUSHIP_REGISTRY": "ghcr.io",
                "GPUSHIP_REGISTRY_USER": "c",
                "GPUSHIP_REGISTRY_PASSWORD": "d",
            }
        )


def test_docker_config_credentials_stay_with_their_host(tmp_path: Path):
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "auths": {
                    "https://index.docker.io/v1/": {"auth": base64.b64encode(b"hub:pw").decode()},
                    "r.example.com": {"identitytoken": "refresh-me"},
                }
            }
        )
    )
    found = CredentialStore({"DOCKER_CONFIG": str(tmp_path)})
    hub = found.find("docker.io")
    assert hub is not None
    assert (hub.username, hub.password, hub.registry) == ("hub", "pw", "docker.io")
    assert hub.basic_header() == "Basic " + base64.b64encode(b"hub:pw").decode()
    token = found.find("r.example.com")
    assert token is not None
    assert token.identity_token == "refresh-me"
    assert token.basic_header() is None
    assert found.find("r.example.com:5000") is None
    assert found.find("ghcr.io") is None


def test_a_token_services_only_entry_adds_trust_to_a_docker_login(tmp_path: Path):
    (tmp_path / "config.json").write_text(
        json.dumps({"auths": {"reg.example.com": {"auth": base64.b64encode(b"u:p").decode()}}})
    )
    found = CredentialStore(
        {
            "DOCKER_CONFIG": str(tmp_path),
            "GPUSHIP_REGISTRY_AUTH": json.dumps(
                {"reg.example.com": {"token-services": ["https://auth.example.com"]}}
            ),
        }
    ).find("reg.example.com")
    assert found is not None
    assert found.username == "u"
    assert found.token_services == (Origin("https", "auth.example.com", 443),)


REGISTRY = Origin("https", "reg.example.com", 443)
CREDENTIAL = Credentials("test", "reg.example.com", "u", "p")


@pytest.mark.parametrize(
    ("realm", "credential", "allowed"),
    [
        ("https://reg.example.com/token", CREDENTIAL, True),
        ("https://reg.example.com:8443/token", CREDENTIAL, False),  # another port: another host
        ("https://auth.example.com/token", CREDENTIAL, False),
        ("https://evil.example.net/token", CREDENTIAL, False),
        (
            "https://auth.example.com/token",
            Credentials(
                "test",
                "reg.example.com",
                "u",
                "p",
                token_services=(Origin.of("https://auth.example.com"),),
            ),
            True,
        ),
        (
            "http://auth.example.com/token",  # named, but plain HTTP off loopback
            Credentials(
                "test",
                "reg.example.com",
                "u",
                "p",
                token_services=(Origin.of("http://auth.example.com"),),
            ),
            False,
        ),
    ],
)
def test_realm_rule(realm: str, credential: Credentials, allowed: bool):
    assert (realm_verdict(Origin.of(realm), REGISTRY, credential, ()) is None) is allowed


def test_known_token_services_apply_to_their_registry_only():
    hub = Credentials("test", "docker.io", "u", "p")
    auth_docker_io = Origin.of("https://auth.docker.io/token")
    registry_1 = Origin.of("https://registry-1.docker.io")
    assert realm_verdict(auth_docker_io, registry_1, hub, ()) is None
    other = Credentials("test", "quay.io", "u", "p")
    verdict = realm_verdict(auth_docker_io, Origin.of("https://quay.io"), other, ())
    assert verdict is not None
    assert "token-services" in verdict


@pytest.mark.parametrize(
    ("url", "insecure", "allowed"),
    [
        ("https://ghcr.io", (), True),
        ("http://ghcr.io", (), False),
        ("http://127.0.0.1:5000", (), True),
        ("http://localhost:5000", (), True),
        ("http://[::1]:5000", (), True),
        ("http://10.0.0.5:5000", (), False),
        ("http://10.0.0.5:5000", ("10.0.0.5:5000",), True),
        ("http://reg.lan:5000", ("reg.lan",), True),
    ],
)
def test_credentials_over_plain_http_only_to_loopback_or_insecure(
    url: str, insecure: tuple[str, ...], allowed: bool
):
    assert may_carry_credentials(Origin.of(url), insecure) is allowed


def test_every_secret_of_registry_auth_is_masked():
    auth = base64.b64encode(b"hub:hub-password").decode()
    environ = {
        "GITHUB_ACTIONS": "true",
        "GPUSHIP_REGISTRY_AUTH": json.dumps(
            {"docker.io": {"auth": auth}, "r.io": {"username": "u", "password": "r-password"}}
        ),
    }
    masked = "\n".join(mask_commands(environ))
    for secret in (auth, "hub-password", "r-password"):
        assert f"::add-mask::{secret}" in masked


def _helper(directory: Path, name: str, marker: Path) -> None:
    """An executable `docker-credential-NAME` under `directory` that leaves `marker` when run
    and answers a credential."""
    program = directory / f"docker-credential-{name}"
    program.parent.mkdir(parents=True, exist_ok=True)
    answer = json.dumps({"ServerURL": "r.io", "Username": "u", "Secret": "helper-secret"})
    program.write_text(f"#!/bin/sh\ntouch {marker}\ncat >/dev/null\necho '{answer}'\n")
    program.chmod(0o755)


@pytest.mark.parametrize(
    "config",
    [
        {"credHelpers": {"r.io": "sub/pwn"}},
        {"credsStore": "sub/pwn"},
        {"credHelpers": {"r.io": "../sub/pwn"}},
        {"credsStore": "-x"},
        {"credHelpers": {"r.io": 7}},
    ],
)
def test_a_helper_name_that_is_not_a_plain_name_is_refused_and_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, object]
):
    """A checked-out repository plants `./docker-credential-sub/pwn`: it must not run."""
    work = tmp_path / "work"
    marker = tmp_path / "ran"
    _helper(work, "sub/pwn", marker)
    _helper(tmp_path / "bin", "-x", marker)
    (tmp_path / "config.json").write_text(json.dumps(config))
    monkeypatch.chdir(work)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    store = CredentialStore({"DOCKER_CONFIG": str(tmp_path)})
    with pytest.raises(InputError, match="is not a helper name") as refused:
        store.find("r.io")
    assert str(tmp_path / "config.json") in str(refused.value)
    assert "\n" not in str(refused.value)
    assert not marker.exists()


def test_a_plain_helper_name_runs_from_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    marker = tmp_path / "ran"
    _helper(tmp_path / "bin", "gpushiptest", marker)
    (tmp_path / "config.json").write_text(json.dumps({"credsStore": "gpushiptest"}))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    found = CredentialStore({"DOCKER_CONFIG": str(tmp_path)}).find("r.io")
    assert found is not None and found.password == "helper-secret"
    assert marker.exists()


@pytest.mark.parametrize(
    ("host", "internal"),
    [
        ("169.254.169.254", True),
        ("2852039166", True),  # 169.254.169.254 as one number, as the C library reads it
        ("0xa9.0xfe.0xa9.0xfe", True),
        ("::ffff:169.254.169.254", True),
        ("[fd00::2]", True),
        ("10.1.2.3", True),
        ("192.168.0.1", True),
        ("100.64.0.1", True),  # shared address space (carrier-grade NAT)
        ("0.0.0.0", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("auth.localhost", True),
        ("8.8.8.8", False),
        ("auth.docker.io", False),  # a name: not resolved
    ],
)
def test_internal_addresses_in_every_spelling(host: str, internal: bool):
    assert is_internal(host) is internal


@pytest.mark.parametrize(
    ("realm", "registry", "named", "allowed"),
    [
        ("http://169.254.169.254/token", "https://reg.example.com", (), False),
        ("http://127.0.0.1:8080/token", "https://reg.example.com", (), False),
        ("http://10.0.0.6/token", "http://10.0.0.5:5000", (), False),
        ("http://10.0.0.6/token", "http://10.0.0.5:5000", ("http://10.0.0.6",), True),
        # The registry's own host, another port: a registry and its token service on one box.
        ("http://10.0.0.5:5001/token", "http://10.0.0.5:5000", (), True),
        ("http://127.0.0.1:5001/token", "http://localhost:5000", (), True),
        ("http://localhost:5001/token", "http://127.0.0.1:5000", (), True),
        ("https://auth.example.com/token", "https://reg.example.com", (), True),
    ],
)
def test_realm_address_rule(realm: str, registry: str, named: tuple[str, ...], allowed: bool):
    verdict = realm_address_verdict(
        Origin.of(realm), Origin.of(registry), tuple(map(Origin.of, named))
    )
    assert (verdict is None) is allowed
