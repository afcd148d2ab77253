"""OCI Distribution API client (distribution-spec v1.1) on `requests`: the one client every
stage is given (`RegistryAccess.client()`), put together from parts that each read alone.

- session.py: how a request reaches a registry: scheme, TLS, proxies, the credential for the
  host, typed errors for answers (`RegistrySession`);
- reads.py: manifests and blobs read and verified against their digests (`RegistryReads`);
- writes.py: blobs pushed, mounted, uploaded and copied; manifests put (tagging) and deleted
  (`RegistryWrites`);
- listing.py: tag lists and referrers (`RegistryListing`).

Below them: transport.py (deadline, timeouts, bounded answers, retries), retry.py (every
retry rule), auth.py and credentials.py (which credential goes where), redirects.py, tls.py.
"""

from __future__ import annotations

from types import TracebackType

from gpuship.registry.listing import RegistryListing
from gpuship.registry.reads import FetchedDescriptor, FetchedManifest
from gpuship.registry.session import DELETE, PULL, PUSH
from gpuship.registry.writes import DEFAULT_CHUNK_SIZE, RegistryWrites

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "DELETE",
    "PULL",
    "PUSH",
    "FetchedDescriptor",
    "FetchedManifest",
    "RegistryClient",
]


class RegistryClient(RegistryWrites, RegistryListing):
    """Talks to any number of registries; one instance per command run."""

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
