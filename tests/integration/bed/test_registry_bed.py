"""The bed registries answer the OCI distribution API on 127.0.0.1; the topology is as
described, and its leak ledger really flags a credential at the wrong host."""

from __future__ import annotations

import pytest
import requests

from bed.ledger import BedCredential, CredentialLedger
from bed.recorder import RecordingProxy, run_proxy
from bed.registry import Registry
from bed.topology import RegistryTopology

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


def test_the_leak_ledger_flags_a_credential_at_the_wrong_host(registry: Registry) -> None:
    # A ledger of its own: a leak staged here must not fail the session's topology ledger.
    ledger = CredentialLedger()
    with run_proxy(RecordingProxy(registry.host, ledger)) as proxy:
        ledger.add_credential(BedCredential("mine", "me", "pw", frozenset({proxy.host})))
        ledger.add_credential(BedCredential("theirs", "them", "pw2", frozenset({"elsewhere"})))
        for auth in (("me", "pw"), ("them", "pw2"), ("stranger", "x"), None):
            assert requests.get(f"{proxy.url}/v2/", auth=auth, timeout=5).status_code == 200
        ledger.issued("a-token", "elsewhere")
        headers = {"Authorization": "Bearer a-token"}
        assert requests.get(f"{proxy.url}/v2/", headers=headers, timeout=5).status_code == 200
    assert ledger.presented(proxy.host) == {
        "mine",
        "theirs",
        "an unknown Basic credential for user 'stranger'",
        "token for elsewhere",
    }
    assert ledger.violations == [
        f"theirs was presented to {proxy.host}",
        f"an unknown Basic credential for user 'stranger' was presented to {proxy.host}",
        f"token for elsewhere was presented to {proxy.host}",
    ]


def test_topology_registries_answer_as_described(registry_topology: RegistryTopology) -> None:
    push = requests.get(f"{registry_topology.push.url}/v2/", timeout=5)
    assert push.status_code == 401
    assert f'realm="{registry_topology.push.issuer.realm}"' in push.headers["WWW-Authenticate"]
    assert registry_topology.push.issuer.host != registry_topology.push.host
    tls = requests.get(
        f"{registry_topology.tls.url}/v2/", verify=str(registry_topology.ca.cert_path), timeout=5
    )
    assert tls.status_code == 401
    assert tls.headers["WWW-Authenticate"].startswith("Basic ")
    public = registry_topology.public
    assert requests.get(f"{public.url}/v2/", timeout=5).status_code == 200
    refused = requests.post(f"{public.url}/v2/any/blobs/uploads/", timeout=5)
    assert refused.status_code == 405
