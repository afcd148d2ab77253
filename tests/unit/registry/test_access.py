"""The one registry access a command gives every stage that talks to a registry, on data (the
hostile server tests in tests/integration/registry drive it over HTTP)."""

from __future__ import annotations

import os
from pathlib import Path

from gpuship.cli.context import Context
from gpuship.limits import DEFAULT_LIMITS
from gpuship.registry.access import RegistryAccess
from gpuship.registry.retry import RetryPolicy

CONFIG = """\
deadline: 300
registries:
  insecure: [registry.internal:5000]
  attempts: 2
  backoff: 0.25
  request-timeout: 4
limits:
  manifest-max-bytes: 1000
"""


def test_a_command_access_carries_registries_deadline_limits_and_environment(tmp_path: Path):
    config = tmp_path / "gpuship.yaml"
    config.write_text(CONFIG)
    environ = {"DOCKER_CONFIG": str(tmp_path)}
    ctx = Context(config_path=config, environ=environ, flags={"deadline": 9})
    access = ctx.registry_access()
    assert access.insecure == ("registry.internal:5000",)
    assert access.retry == RetryPolicy(attempts=2, backoff_s=0.25, timeout_s=4.0)
    assert access.deadline is ctx.deadline
    assert access.deadline is not None and access.deadline.seconds == 9  # the flag wins
    assert access.limits.manifest_max_bytes == 1000
    assert access.environ is environ
    with access.client() as client:
        assert client.deadline is ctx.deadline
        assert client.limits is access.limits


def test_without_config_the_access_has_the_defaults_and_the_command_deadline():
    ctx = Context(config_path=None, environ={})
    access = ctx.registry_access()
    assert (access.insecure, access.retry, access.limits) == ((), RetryPolicy(), DEFAULT_LIMITS)
    assert access.deadline is ctx.deadline


def test_outside_a_command_the_access_reads_the_process_environment_with_no_deadline():
    access = RegistryAccess()
    assert access.environ is os.environ
    assert access.deadline is None
    with access.client() as client:
        assert client.deadline.describe() == "no deadline"
