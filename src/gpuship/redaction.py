"""Credentials taken out of what gpuship says: URL userinfo and signed query parameters, in
text and in JSON-like data, and user-given text quoted for a message.

The CLI boundary, every rendering of a report and the log stream pass their text through
here (`gpuship.errors` holds the error types; their messages quote with `shown`).
"""

from __future__ import annotations

import re
from typing import Any

# Longest user-given text quoted back in a message: errors stay one readable line.
_SHOWN_CHARS = 60


# `scheme://userinfo@host` (RFC 3986 §3.2.1). Userinfo cannot hold "/", "?", "#", white
# space, quotes or brackets; it runs to the last "@" before them, since a password written
# with a raw "@" (`https://u:p@ss@host`) is still a password. A host starts with a letter, a
# digit, "[" (IPv6) or "%"; `https://...@<commit>` in a rule's advice is no URL. The match
# starts at "://", not at the scheme: from each of the many places a scheme could start
# (`a.a.a.a...`) the engine would scan again, quadratic in the text; a run of userinfo ends
# at the "/" of the next "://", so the whole text is read about once.
_USERINFO = re.compile(r"://(?P<userinfo>[^\s/?#\"<>\\\[\]{}]+)@(?=[A-Za-z0-9\[%])")
# Query parameters whose value is a credential: a pre-signed redirect (AWS SigV4
# `X-Amz-Signature`, `X-Amz-Credential`, `X-Amz-Security-Token`; Google Cloud Storage V4
# `X-Goog-Signature`, `X-Goog-Credential`; Azure SAS `sig`; CloudFront and GCS V2 `Signature`;
# Docker Hub's blob redirect `verify=<expiry>-<hmac>`, as docker pull errors quote it) and
# OAuth-style tokens; names in any ASCII case. Only the value is hidden, up to the next "&",
# "#", white space, quote, bracket or backslash (which ends a JSON string's text).
_CREDENTIAL_PARAMETERS = (
    "x-amz-signature|x-amz-credential|x-amz-security-token|x-goog-signature|x-goog-credential"
    "|signature|sig|verify|token|access_token|refresh_token|id_token|client_secret|password|jwt"
)
_QUERY_SECRET = re.compile(
    rf"(?P<before>[?&](?ai:{_CREDENTIAL_PARAMETERS})=)(?P<value>[^&#\s\"'<>\\\[\]{{}}]+)"
)


def redact_credentials(text: str) -> str:
    """`text` with the userinfo of every URL in it hidden: `https://user:***@host/...`, and
    `https://***@host/...` when the userinfo is one word (a token given as the user name);
    and the values of query parameters that carry a signature or token (`?X-Amz-Signature=***`).

    The one place credentials a user wrote into a URL are taken out of what gpuship says: the
    CLI boundary, every rendering of a report and the log stream pass their text through it.
    The password is hidden, the user name kept when there is a password (as pip does,
    `pip/_internal/utils/misc.py` redact_netloc). Time is linear in the text: a report of
    many MiB quoting hostile labels is read about twice.
    """
    if "@" in text:
        text = _USERINFO.sub(_hide, text)
    if "=" in text:
        text = _QUERY_SECRET.sub(r"\g<before>***", text)
    return text


def redact_data(value: Any) -> Any:
    """A tree of JSON values with every string in it, keys too, passed through
    `redact_credentials`. For a rendering that escapes text as it serialises (JSON writes "ä"
    as `\\u00e4`, YAML as `\\xE4`), so the pattern would no longer see the password in
    what it wrote: it hides credentials in the data first."""
    if isinstance(value, str):
        return redact_credentials(value)
    if isinstance(value, dict):
        return {redact_data(key): redact_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(item) for item in value]
    return value


def _hide(match: re.Match[str]) -> str:
    user, colon, _ = match["userinfo"].partition(":")
    hidden = f"{user}:***" if colon else "***"
    return f"://{hidden}@"


def shown(text: str) -> str:
    """`text` quoted for a message, cut to a readable length (a 100,000-digit "version"),
    credentials in URLs hidden first (a cut could leave a password without its "@")."""
    text = redact_credentials(text)
    if len(text) <= _SHOWN_CHARS:
        return repr(text)
    return f"{text[:_SHOWN_CHARS]!r}... ({len(text)} characters)"
