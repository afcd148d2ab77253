"""No credential survives `redact_credentials`, in any form, whatever text is around it.

- A credential gpuship holds (`hold`: passwords, tokens, the base64 of `user:password`) is
  hidden as it is and in every form text quotes it in, wherever it appears, also where a text
  was cut short in it; hypothesis writes the credentials and the text around them.
- A credential gpuship never held, in the shape of an `Authorization` value (a header dump,
  JSON, Go's `map[...]`, a bare `Basic`/`Bearer` credential), is hidden by its shape.
- Prose that merely names a scheme (`Basic authentication`, `Bearer realm="..."`) is kept.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Iterator
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gpuship.redaction import HELD, HeldSecrets, hold, redact_credentials, shown


@pytest.fixture(autouse=True)
def _nothing_held() -> Iterator[None]:
    HELD.forget()
    yield
    HELD.forget()


_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_CREDENTIAL = st.text(st.characters(exclude_categories=("Cs",)), min_size=4, max_size=40)
_PRINTABLE = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=24)


def _forms(value: str) -> list[str]:
    """The forms a text may quote `value` in, written out plainly."""
    return [
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        repr(value)[1:-1],
        quote(value, safe=""),
        quote_plus(value, safe=""),
        html.escape(value),
        value.replace("|", "\\|"),
    ]


def _basic(username: str, password: str) -> str:
    return base64.b64encode(f"{username}:{password}".encode()).decode()


@settings(max_examples=300, deadline=None)
@given(
    username=_PRINTABLE.filter(lambda name: ":" not in name),
    password=_CREDENTIAL,
    form=st.integers(0, 7),
    before=_TEXT,
    after=_TEXT,
)
def test_no_held_credential_survives_in_any_form(
    username: str, password: str, form: int, before: str, after: str
):
    basic = _basic(username, password)
    hold(password, basic)
    for quoted in (_forms(password)[form], f"Basic {basic}", f"Authorization: Basic {basic}"):
        redacted = redact_credentials(before + quoted + after)
        for secret in (*_forms(password), *_forms(basic)):
            if len(secret) >= 4:
                assert secret not in redacted


@settings(max_examples=200, deadline=None)
@given(
    token=st.text(st.characters(exclude_categories=("Cs",)), min_size=9, max_size=40),
    before=_TEXT,
    data=st.data(),
)
def test_a_held_credential_cut_short_at_the_end_of_a_text_is_hidden(
    token: str, before: str, data: st.DataObject
):
    cut = data.draw(st.integers(8, len(token) - 1), label="cut")  # at least 8: _SHORTEST_CUT
    hold(token)
    redacted = redact_credentials(before + token[:cut])
    assert not redacted.endswith(token[:cut])
    assert token not in redacted


def test_a_word_ending_in_a_few_of_a_credentials_first_characters_is_left_alone():
    # A build secret's name `hf_token` beside a registry token `token-...` (the build report
    # lists the secret names): 5 leading characters tell nothing; 8 are hidden.
    hold("token-0123456789abcdef")
    assert redact_credentials("hf_token") == "hf_token"
    assert redact_credentials("cut at token-01") == "cut at ***"


def test_a_short_credential_is_held_but_not_searched_for():
    secrets = HeldSecrets()
    announced: list[str] = []
    secrets.listen(announced.append)
    secrets.add("pw", "s3cr3t-token", "pw")
    assert announced == ["pw", "s3cr3t-token"]  # each once, the short one too (the runner masks it)
    assert secrets.hide("password pw s3cr3t-token") == "password pw ***"


def test_forgetting_starts_afresh_and_listeners_stop():
    secrets = HeldSecrets()
    announced: list[str] = []
    stop = secrets.listen(announced.append)
    secrets.add("first-secret")
    secrets.forget()
    assert secrets.hide("first-secret") == "first-secret"
    secrets.add("first-secret")
    stop()
    secrets.add("second-secret")
    assert announced == ["first-secret", "first-secret"]
    assert secrets.hide("second-secret") == "***"


def test_stars_next_to_a_credential_cannot_spell_it_again():
    secrets = HeldSecrets()
    secrets.add("***x")
    assert "***x" not in secrets.hide("***xx")


# Credentials never held: hidden by the shape they are quoted in.
_TOKEN68 = st.text(
    st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/"),
    min_size=1,
    max_size=60,
).flatmap(lambda body: st.sampled_from([body, body + "=", body + "=="]))
_SHAPES = [
    "Authorization: Basic {}",
    "authorization: bearer {}",
    'Authorization: "Bearer {}"',
    '{{"Authorization": "Basic {}"}}',
    '{{"authorization":["Bearer {}"]}}',
    "map[Accept:[*/*] Authorization:[Basic {}] User-Agent:[x]]",
    "Proxy-Authorization: Negotiate {}",
    "authorization=token {}",
    "Authorization: {}",
]
_DELIMITERS = st.sampled_from([" ", "\n", "\t", ",", ";", ")", "]", "'", '"', "<", ""])
# Prose after `Basic`/`Bearer`, as `_PROSE_WORD` keeps it, written out plainly.
_PROSE = re.compile(r"[A-Za-z][a-z]{0,23}|[A-Z]{1,24}")


@settings(max_examples=400, deadline=None)
@given(
    value=_TOKEN68,
    shape=st.sampled_from(_SHAPES),
    before=_TEXT,
    delimiter=_DELIMITERS,
    after=_TEXT,
)
def test_an_authorization_value_is_hidden_whatever_surrounds_it(
    value: str, shape: str, before: str, delimiter: str, after: str
):
    assume(value not in before + after and len(value) >= 4)
    quoted = shape.format(value)
    text = before + quoted + (delimiter if quoted[-1] not in ']}"' else "") + after
    assert value not in redact_credentials(text)


@settings(max_examples=400, deadline=None)
@given(
    scheme=st.sampled_from(["Basic", "Bearer", "basic", "BEARER"]),
    value=_TOKEN68,
    before=_TEXT,
    delimiter=_DELIMITERS.filter(bool),
    after=_TEXT,
)
def test_a_bare_basic_or_bearer_credential_is_hidden(
    scheme: str, value: str, before: str, delimiter: str, after: str
):
    assume(value not in before + after and len(value) >= 4)
    assume(not _PROSE.fullmatch(value.rstrip("=")))
    assert value not in redact_credentials(f"{before}{scheme} {value}{delimiter}{after}")


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "Request blocked.\nAuthorization: Basic dXNlcjpwYXNzd29yZA==\nHost: r.io",
            "Request blocked.\nAuthorization: Basic ***\nHost: r.io",
        ),
        ("map[Authorization:[Bearer eyJh.eyJz.c2ln]]", "map[Authorization:[Bearer ***]]"),
        ('{"Authorization": ["token ghp_0123abc"]}', '{"Authorization": ["token ***"]}'),
        ("Authorization: ghp_0123abc was refused", "Authorization: *** was refused"),
        ("invalid bearer 0a1b2c3d4e", "invalid bearer ***"),
        # Prose and challenges name a scheme and hold no credential.
        ("registry asks for Basic authentication", "registry asks for Basic authentication"),
        ("sent a Bearer challenge", "sent a Bearer challenge"),
        (
            'WWW-Authenticate: Bearer realm="https://auth.io/token",service="r"',
            'WWW-Authenticate: Bearer realm="https://auth.io/token",service="r"',
        ),
        ('Basic realm="Registry Realm"', 'Basic realm="Registry Realm"'),
        ("unauthorized: authentication required", "unauthorized: authentication required"),
        # A Dockerfile line or script a finding quotes names the credential, not its value.
        (
            'RUN curl -H "Authorization: Bearer ${TOKEN}" https://x',
            'RUN curl -H "Authorization: Bearer ${TOKEN}" https://x',
        ),
        (
            "Authorization: token $(cat /run/secrets/gh)",
            "Authorization: token $(cat /run/secrets/gh)",
        ),
        ("authorization failed", "authorization failed"),
    ],
)
def test_authorization_shapes(text: str, redacted: str):
    assert redact_credentials(text) == redacted


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("ci:s3cr3t@ghcr.io/o/app:1", "'ci:***@ghcr.io/o/app:1'"),
        ("ci:s3cr3t@127.0.0.1:5000", "'ci:***@127.0.0.1:5000'"),
        ("ci:p@ss@host/app", "'ci:***@host/app'"),
        # Not credentials: a tag and a digest, an e-mail-like name, a port.
        ("app:v1@sha256:" + "a" * 64, repr("app:v1@sha256:" + "a" * 46) + "... (78 characters)"),
        ("bot@example.com", "'bot@example.com'"),
        ("host:5000/app:1", "'host:5000/app:1'"),
    ],
)
def test_shown_hides_a_user_and_password_written_before_a_host(text: str, quoted: str):
    assert shown(text) == quoted
