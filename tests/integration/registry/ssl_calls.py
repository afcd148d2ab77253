"""Count calls of one `ssl.SSLContext` method (how often CA certificates are loaded)."""

from __future__ import annotations

import ssl
from collections.abc import Callable

import pytest


def count_calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[object]:
    """The arguments of every call of `ssl.SSLContext.<name>` from now on, in order."""
    calls: list[object] = []
    original: Callable[..., None] = getattr(ssl.SSLContext, name)

    def counted(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        calls.append(kwargs or args)
        original(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, name, counted)
    return calls
