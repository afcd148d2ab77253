"""The limits on what a registry may send us, in one place, and the JSON reader that keeps them.

A registry is outside input: a broken or hostile one can answer with a manifest that never
ends, an error body of gigabytes, or JSON nested past Python's recursion limit (redirect loops
are bounded by `redirects.MAX_REDIRECTS`). Each ends in a typed error naming the request,
never a traceback or a blow-up. The numbers are defaults of `RegistryLimits`; `RegistryClient`
takes another value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gpuship.errors import InputError

# distribution caps manifests it accepts at 4 MiB (`maxManifestBodySize` in
# registry/handlers/manifests.go, v2.8 and v3); the distribution-spec asks registries to accept
# at least 4 MB. A manifest larger than that is not one any registry stores.
MANIFEST_BYTES = 4 << 20
# Tag lists of repositories with many thousands of tags, token answers, referrers indexes.
DOCUMENT_BYTES = 16 << 20
# An error answer is only read for its message.
ERROR_BODY_BYTES = 64 << 10
# OCI documents nest about five levels (index > descriptor > platform > features); error bodies
# three. Far below Python's recursion limit (1000), so a parser never hits it.
JSON_DEPTH = 32
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_AS_PARENS = bytes.maketrans(b"[]{}", b"()()")


@dataclass(frozen=True)
class RegistryLimits:
    """Most bytes read per kind of answer, and the deepest JSON accepted."""

    manifest_bytes: int = MANIFEST_BYTES
    document_bytes: int = DOCUMENT_BYTES
    error_body_bytes: int = ERROR_BODY_BYTES
    json_depth: int = JSON_DEPTH


class RegistryLimitExceeded(InputError):
    """An answer from a registry is larger or deeper than the limits allow."""


def json_depth(data: bytes | str, stop_at: int) -> int:
    """How deeply `data` nests arrays and objects (brackets inside strings do not count),
    counted up to `stop_at` + 1.

    Runs before parsing, so a document nested past the recursion limit is refused before any
    recursive code sees it. All in C (bytes methods): strings are dropped, then everything but
    brackets, then each pass deletes the innermost `()` pairs, so the number of passes that
    change anything is the depth.
    """
    raw = data.encode() if isinstance(data, str) else data
    # Escaped backslashes and quotes go first; then every other piece between quotes is a string.
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.split(b'"')[::2])
    brackets = outside.translate(_AS_PARENS, _NOT_BRACKETS)
    depth = 0
    while brackets and depth <= stop_at:
        inner = brackets.replace(b"()", b"")
        if inner == brackets:
            # Unbalanced (cut short): every bracket left open encloses what follows it, and
            # the JSON parser would recurse into it before finding the document broken.
            return depth + brackets.count(b"(")
        brackets = inner
        depth += 1
    return depth


def load_json(data: bytes | str, what: str, limits: RegistryLimits | None = None) -> Any:
    """Parse JSON read from a registry; InputError naming `what` when it is not JSON, or
    nests deeper than `limits.json_depth`."""
    depth_limit = (limits or RegistryLimits()).json_depth
    if _may_nest_deeply(data, depth_limit) and json_depth(data, depth_limit) > depth_limit:
        raise RegistryLimitExceeded(
            f"{what} nests JSON deeper than {depth_limit} levels; refusing to parse it"
        )
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{what} is not JSON: {error}") from None


def _may_nest_deeply(data: bytes | str, depth_limit: int) -> bool:
    # The exact scan is a Python loop; a document with fewer opening brackets than the limit
    # cannot exceed it, and counting them is done in C.
    if isinstance(data, bytes):
        return data.count(b"[") + data.count(b"{") > depth_limit
    return data.count("[") + data.count("{") > depth_limit
