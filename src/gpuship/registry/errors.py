"""Typed errors of the registry client, each mapped onto the CLI's exit codes via gpuship.errors."""

from __future__ import annotations

from gpuship.errors import InputError, RegistryUnavailable


class RegistryRequestError(InputError):
    """The registry refused a request with a 4xx answer (after auth was tried).

    `codes` holds the OCI error codes of a JSON error body, or is empty when the body was not JSON
    (Docker Hub answers some errors in plain text).
    """

    def __init__(self, message: str, *, status: int, codes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.codes = codes


class NotFound(RegistryRequestError):
    """A manifest, blob, tag or repository is unknown to the registry (HTTP 404)."""


class RegistryAuthError(RegistryRequestError):
    """Credentials are missing, wrong, or lack the permission the request needs (401/403)."""


class DigestMismatch(RegistryUnavailable):
    """Content read from a registry does not hash to the digest it was requested by."""


__all__ = [
    "DigestMismatch",
    "NotFound",
    "RegistryAuthError",
    "RegistryRequestError",
    "RegistryUnavailable",
]
