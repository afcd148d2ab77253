"""Redirects followed by hand, so that no credential crosses to another origin.

Registries redirect blob GETs to object storage or a CDN (S3, CloudFront, GCS); distribution-spec
`main` lets them redirect any request and says clients MUST NOT forward `Authorization` across
hosts. requests would strip the header on a host change too (`Session.should_strip_auth`), but
it then adds `~/.netrc` credentials for the new host and re-sends a 307's body, secrets included,
wherever it points. Here the rule is in one place:

- `Authorization` goes only to the registry's own origin (`home`): a hop elsewhere is sent
  without it, and a hop back home gets it again;
- HTTPS is never redirected down to plain HTTP;
- 301/302/303 continue as GET (HEAD stays HEAD) without a body, as browsers and requests do;
  307/308 keep method and body, and only a body that can be sent again is followed;
- at most MAX_REDIRECTS hops; `params` belong to the first URL only (a Location carries its own).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import requests

from gpuship.registry.errors import RegistryRequestError
from gpuship.registry.origin import Origin, header_url

MAX_REDIRECTS = 10
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_BODY_HEADERS = frozenset({"content-type", "content-length", "content-range"})

Send = Callable[..., requests.Response]


def _replayable(kwargs: Mapping[str, Any]) -> bool:
    body = kwargs.get("data")
    return body is None or isinstance(body, (bytes, str, dict, list))


def _without(headers: Mapping[str, str], names: frozenset[str]) -> dict[str, str]:
    return {key: value for key, value in headers.items() if key.lower() not in names}


def follow_redirects(
    send: Send,
    method: str,
    url: str,
    headers: Mapping[str, str],
    *,
    home: Origin | None = None,
    **kwargs: Any,
) -> requests.Response:
    """Send, following up to MAX_REDIRECTS redirects under the rules above; the final response
    (which may itself be a redirect that could not be followed) is returned."""
    home = home or Origin.of(url)
    hop_headers = dict(headers)
    for _ in range(MAX_REDIRECTS + 1):
        response = send(method, url, headers=hop_headers, allow_redirects=False, **kwargs)
        if not response.is_redirect:
            return response
        status = response.status_code
        keeps_method = status in (307, 308)
        if keeps_method and not _replayable(kwargs):
            return response  # a streamed body cannot be sent twice; the caller reports it
        target = header_url(url, response.headers["Location"], "Location")
        response.close()
        if url.startswith("https://") and target.startswith("http://"):
            raise RegistryRequestError(
                f"{method} {url.split('?', 1)[0]} was redirected to plain HTTP "
                f"({target.split('?', 1)[0]}); gpuship does not follow HTTPS-to-HTTP redirects",
                status=status,
            )
        kwargs.pop("params", None)
        if not keeps_method and method != "HEAD":
            method = "GET"
            kwargs.pop("data", None)
            headers = _without(headers, _BODY_HEADERS)
        hop_headers = (
            dict(headers) if Origin.of(target) == home else _without(headers, _CREDENTIAL_HEADERS)
        )
        url = target
    raise RegistryRequestError(
        f"{method} {url.split('?', 1)[0]}: more than {MAX_REDIRECTS} redirects", status=310
    )
