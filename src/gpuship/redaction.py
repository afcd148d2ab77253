"""Credentials taken out of what gpuship says, in one place: the CLI boundary, every rendering
of a report, the runner's files and the log stream pass their text through `redact_credentials`
(`gpuship.errors` holds the error types; their messages quote with `shown`).

What is hidden:

- URL userinfo (`https://user:***@host`) and the values of query parameters that sign or
  authorise a request (`?X-Amz-Signature=***`);
- `Authorization`-shaped values: the value of an `Authorization` or `Proxy-Authorization`
  header however it is quoted (`Authorization: Basic ***`, `"Authorization": ["Bearer ***"]`,
  Go's `map[Authorization:[token ***]]`), and `Basic`/`Bearer` followed by a credential
  anywhere (a registry, proxy or WAF that quotes the request in an error body);
- every credential gpuship holds (`hold`): passwords, tokens, identity tokens, the base64 of
  `user:password` a Basic header carries, the tokens token services hand out, however the
  text quotes them (as they are, JSON-escaped, Python's repr, percent-encoded, HTML, a
  Markdown table cell), and the start of one where a text was cut short in it.

Under GitHub Actions the CLI also tells the runner to mask each credential gpuship holds
(`listen`, `gpuship.gha.mask_lines`), before anything sends it.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, quote_plus

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


# An `Authorization` or `Proxy-Authorization` header's value, however a body quotes the request:
# `Authorization: Basic x` (a header dump), `"Authorization": "Bearer x"` and
# `"authorization": ["Bearer x"]` (JSON), `map[Authorization:[Basic x]]` (Go's `%v` of an
# http.Header), `authorization=token x` (a form or log field). A scheme of the IANA HTTP
# Authentication Scheme Registry, or one in common use (GitHub's `token`, AWS SigV4, Azure
# `SharedKey`, Okta `SSWS`), is kept; the credential after it, or the whole value when it has no
# scheme (a bare token), is hidden up to white space, a quote, a bracket or a separator.
_AUTH_SCHEMES = (
    "basic|bearer|token|digest|negotiate|ntlm|oauth|dpop|gnap|hoba|mutual|privatetoken"
    "|concealed|scram-sha-1|scram-sha-256|vapid|aws4-hmac-sha256|sharedkey|ssws|apikey|key|jwt"
)
_AUTHORIZATION = re.compile(
    r"(?P<name>(?i:(?:proxy-)?authori[sz]ation))(?P<between>[\"']?\s*[:=]\s*\[?\s*[\"']?\s*)"
    rf"(?:(?P<scheme>(?i:{_AUTH_SCHEMES}))(?P<space>\s+))?"
    r"(?P<value>[^\s\"'\[\]{}()<>,;&]+)"
)
# `Basic <token68>` or `Bearer <token68>` anywhere (RFC 9110 §11.4: token68 is letters,
# digits, `-._~+/`, then `=` padding), whole: not followed by another token character
# (`dXNl==abc` is no token68). Giving characters back can never satisfy that look-ahead, so
# the match is all or nothing, as a possessive quantifier (Python 3.11+) would make it.
_SCHEME_CREDENTIAL = re.compile(
    r"(?P<scheme>(?i:basic|bearer))(?P<space>\s+)(?P<value>[A-Za-z0-9\-._~+/]+=*)"
    r"(?![A-Za-z0-9\-._~+/=])"
)
# What follows `Basic`/`Bearer` in prose (`Basic authentication`, `Bearer token`, `BEARER`) or
# in a challenge (`Bearer realm="..."`: the parameter's name before its `=`), not a credential:
# letters only, in one case after the first; a credential this short and plain is not one.
_PROSE_WORD = re.compile(r"[A-Za-z][a-z]{0,23}|[A-Z]{1,24}")


def redact_credentials(text: str) -> str:
    """`text` with every credential in it hidden (the module's list): the credentials gpuship
    holds wherever they appear, the userinfo of every URL (`https://user:***@host/...`, and
    `https://***@host/...` when the userinfo is one word, a token given as the user name), the
    values of query parameters that carry a signature or token (`?X-Amz-Signature=***`), and
    `Authorization`-shaped values (`Authorization: Basic ***`, `Bearer ***`).

    The password is hidden, the user name kept when there is a password (as pip does,
    `pip/_internal/utils/misc.py` redact_netloc). Time is linear in the text: a report of
    many MiB quoting hostile labels is read a few times.
    """
    text = HELD.hide(text)
    if "@" in text:
        text = _USERINFO.sub(_hide, text)
    if "=" in text:
        text = _QUERY_SECRET.sub(r"\g<before>***", text)
    text = _AUTHORIZATION.sub(_hide_authorization, text)
    return _SCHEME_CREDENTIAL.sub(_hide_scheme_credential, text)


def _hide_authorization(match: re.Match[str]) -> str:
    if match["value"].startswith("$"):
        return match[0]  # `Bearer ${TOKEN}`, `$(cat secret)`: a shell expansion, no credential
    scheme = f"{match['scheme']}{match['space']}" if match["scheme"] else ""
    return f"{match['name']}{match['between']}{scheme}***"


def _hide_scheme_credential(match: re.Match[str]) -> str:
    if _PROSE_WORD.fullmatch(match["value"].rstrip("=")):
        return match[0]
    return f"{match['scheme']}{match['space']}***"


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


# A value given as `user:password@host...`: an image reference or a registry host with a
# credential written into it, which has no scheme for `_USERINFO` to find. The password runs to
# the last "@" before a "/"; `name:tag@sha256:<hex>` (a tag and a digest) is no credential.
_LEADING_USERINFO = re.compile(
    r"^(?P<user>\s*[^\s/@:]*):[^\s/]*@"
    r"(?![a-z0-9]+(?:[+._-][a-z0-9]+)*:[A-Za-z0-9=_-]{32,}$)"
)


def shown(text: str) -> str:
    """`text` quoted for a message, cut to a readable length (a 100,000-digit "version"),
    credentials hidden first (a cut could leave a password without its "@"), including a
    `user:password@` that starts the value (`user:pw@host/app:1` given as a reference)."""
    text = redact_credentials(_LEADING_USERINFO.sub(r"\g<user>:***@", text))
    if len(text) <= _SHOWN_CHARS:
        return repr(text)
    return f"{text[:_SHOWN_CHARS]!r}... ({len(text)} characters)"


# Shorter credentials are not searched for in text: they would hide parts of ordinary words
# (the runner masks them all the same). Their Basic form (base64 of `user:password`) is longer.
_SHORTEST_HELD = 4


def _quoted_forms(value: str) -> set[str]:
    """`value` as text may quote it: as it is, JSON-escaped (ASCII or not; Go escapes `<>&`
    too), Python's repr, percent-encoded (a URL or form), HTML, a Markdown table cell. The
    workflow-command escapes are applied after redaction (`gpuship.gha`), so need no form."""
    forms = {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1]
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026"),
        repr(value)[1:-1],
        quote(value, safe=""),
        quote_plus(value, safe=""),
        html.escape(value),
        value.replace("|", "\\|"),
    }
    return {form for form in forms if len(form) >= _SHORTEST_HELD}


class HeldSecrets:
    """The credentials this process holds, hidden wherever a text quotes them (`hide`), and
    announced once each to listeners (the CLI's `::add-mask::` under GitHub Actions).
    Thread-safe: token renewals register from the threads of a blob copy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, None] = {}
        self._forms: tuple[str, ...] = ()
        self._pattern: re.Pattern[str] | None = None
        self._listeners: list[Callable[[str], None]] = []

    def add(self, *values: str) -> None:
        """Hold `values` (empty ones are ignored); each new one is announced to the listeners
        before this returns, so before the caller sends it anywhere."""
        with self._lock:
            new = [value for value in dict.fromkeys(values) if value and value not in self._values]
            if not new:
                return
            self._values.update(dict.fromkeys(new))
            forms = set().union(*(_quoted_forms(value) for value in self._values))
            # Longest first: a form inside another (a token and its percent-encoding) loses.
            self._forms = tuple(sorted(forms, key=lambda form: (-len(form), form)))
            alternatives = "|".join(map(re.escape, self._forms))
            self._pattern = re.compile(alternatives) if alternatives else None
            listeners = list(self._listeners)
        for value in new:
            for listener in listeners:
                listener(value)

    def forget(self) -> None:
        """Hold nothing: the CLI starts each run with the credentials of that run only (a
        process that runs several, as tests do, announces each run's afresh)."""
        with self._lock:
            self._values, self._forms, self._pattern = {}, (), None

    def listen(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call `listener` with every credential held from now on; returns the undo."""
        with self._lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._lock:
                self._listeners.remove(listener)

        return stop

    def hide(self, text: str) -> str:
        """`text` with every held credential in it, or cut short at its end, written `***`.

        Repeated until none is left: `***` next to the text around it could spell a credential
        that holds `*` again; each round shortens the text, as every form is longer than
        `***`. Texts that hold none are only searched (`in`), not rewritten."""
        forms, pattern = self._forms, self._pattern
        if pattern is None:
            return text
        while True:
            before = text
            if any(form in text for form in forms):
                text = pattern.sub("***", text)
            text = _cut_at_end(text, forms)
            if text == before:
                return text


# A text ending in fewer of a credential's first characters is not taken for a cut one: a
# word such as the secret name `hf_token` ends in the first characters of a credential
# `token-...` (the runner masks whole values only; a few leading characters tell nothing).
_SHORTEST_CUT = 8


def _cut_at_end(text: str, forms: tuple[str, ...]) -> str:
    """`text` with a held credential's start hidden where the text ends in it: a body or
    message cut at a limit, in the middle of a credential. Only where the credential's first
    characters occur near the end is anything compared."""
    for form in forms:
        tail = text[-(len(form) - 1) :]
        start = tail.find(form[:_SHORTEST_CUT])
        while start != -1:
            if form.startswith(tail[start:]):
                return text[: len(text) - len(tail) + start] + "***"
            start = tail.find(form[:_SHORTEST_CUT], start + 1)
    return text


# The one set of credentials of this process.
HELD = HeldSecrets()


def hold(*values: str) -> None:
    """Hold `values` as credentials of this process: hidden in everything gpuship says from now
    on, and masked by the runner under GitHub Actions. Call it before a credential is sent."""
    HELD.add(*values)
