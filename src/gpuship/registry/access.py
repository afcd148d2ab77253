"""How a command reaches registries: one value every stage that talks to a registry is given.

The plain HTTP hosts, the environment credentials and CAs come from, the retry policy, the
command's deadline and the size limits travel together, so a stage that reads an image deep
down (inspect, verify, route) makes its client exactly as a release command does.

Cheap to import (no `requests`): stages name it in signatures, the client is made on demand.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.registry.deadline import Deadline
from gpuship.registry.retry import RetryPolicy

if TYPE_CHECKING:
    from gpuship.registry.client import RegistryClient


@dataclass(frozen=True)
class RegistryAccess:
    """`registries:` (insecure hosts, retries), the environment, the deadline and `limits:`."""

    insecure: tuple[str, ...] = ()
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # None: no deadline (a client used outside a command).
    deadline: Deadline | None = None
    limits: Limits = DEFAULT_LIMITS

    def client(self) -> RegistryClient:
        """A new client (one per reader: each closes its own connections)."""
        from gpuship.registry.client import RegistryClient

        return RegistryClient(
            insecure=self.insecure,
            environ=self.environ,
            retry=self.retry,
            deadline=self.deadline,
            limits=self.limits,
        )
