"""The bed registries answer the OCI distribution API on 127.0.0.1."""

from __future__ import annotations

import pytest
import requests

from bed.registry import Registry

pytestmark = pytest.mark.integration


def test_registry_serves_v2_api_without_auth(registry: Registry) -> None:
    response = requests.get(f"{registry.url}/v2/", timeout=5)
    assert response.status_code == 200
    assert response.headers["Docker-Distribution-Api-Version"] == "registry/2.0"
    assert registry.host.startswith("127.0.0.1:")


def test_basic_auth_registry_rejects_anonymous_and_accepts_credentials(
    registry_basic_auth: Registry,
) -> None:
    anonymous = requests.get(f"{registry_basic_auth.url}/v2/", timeout=5)
    assert anonymous.status_code == 401
    assert anonymous.headers["WWW-Authenticate"].startswith("Basic ")
    wrong = requests.get(f"{registry_basic_auth.url}/v2/", auth=("gpuship", "nope"), timeout=5)
    assert wrong.status_code == 401
    ok = requests.get(f"{registry_basic_auth.url}/v2/", auth=registry_basic_auth.auth, timeout=5)
    assert ok.status_code == 200
