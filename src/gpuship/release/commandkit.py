"""What the release commands share: the registry client, the config digest, blob progress."""

from __future__ import annotations

import hashlib
import json
import sys
from typing import TYPE_CHECKING

from gpuship.cli.context import Context

if TYPE_CHECKING:
    from gpuship.registry.client import RegistryClient


def registry_client(ctx: Context) -> RegistryClient:
    """A client honouring `registries.insecure` and the command's environment."""
    from gpuship.registry.client import RegistryClient

    return RegistryClient(insecure=ctx.config.registries.insecure, environ=ctx.environ)


def config_digest(ctx: Context) -> str:
    """sha256 of the config file used (or of the effective config when there is no file)."""
    if ctx.config_path is not None and ctx.config_path.is_file():
        data = ctx.config_path.read_bytes()
    else:
        dumped = ctx.config.model_dump(mode="json", by_alias=True)
        data = json.dumps(dumped, sort_keys=True, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


class BlobProgress:
    """Progress of blob copies on stderr: one updating line on a terminal, else a line per
    blob when it completes (compact in CI logs)."""

    def __init__(self, sizes: dict[str, int] | None = None) -> None:
        self._done: dict[str, int] = {}
        self._sizes = sizes or {}
        self._tty = sys.stderr.isatty()

    def __call__(self, digest: str, count: int) -> None:
        self._done[digest] = self._done.get(digest, 0) + count
        total = sum(self._done.values())
        if self._tty:
            sys.stderr.write(f"\rcopying {digest[:19]}: {total / 1e6:.1f} MB copied")
            sys.stderr.flush()

    def finish(self) -> None:
        """End the progress display with one summary line."""
        if self._done:
            total = sum(self._done.values())
            prefix = "\n" if self._tty else ""
            sys.stderr.write(f"{prefix}copied {len(self._done)} blobs, {total / 1e6:.1f} MB\n")
