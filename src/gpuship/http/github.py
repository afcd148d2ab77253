"""GitHub's REST API for one call: taking a label off a self-hosted runner.

docs.github.com, REST API "Self-hosted runners":
- "List self-hosted runners for a repository" (or "... for an organization"):
  `GET {api}/repos/{owner}/{repo}/actions/runners?name=NAME` gives the runner's id;
- "Remove a custom label from a self-hosted runner for a repository" (or organization):
  `DELETE {api}/repos/{owner}/{repo}/actions/runners/{runner_id}/labels/{name}`, 200 with the
  labels left, 404 when the runner does not carry the label.
Both need a token allowed to administer the repository's (or organization's) runners; it is
sent to the API host only, and a redirect is refused rather than followed (it would carry the
token elsewhere). Python's urllib, not `requests`: two calls need no more, and the base
install (the route action's) stays without the image extra.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from gpuship.errors import EnvironmentUnavailable, InputError

API_VERSION = "2022-11-28"  # the X-GitHub-Api-Version these calls are documented for
TIMEOUT = 30.0


@dataclass(frozen=True)
class RunnerScope:
    """Where the runners are registered: `repos/OWNER/REPO` or `orgs/ORG`, under `api`."""

    api: str  # GITHUB_API_URL: https://api.github.com, or a GitHub Enterprise Server's
    owner: str  # `repos/OWNER/REPO` or `orgs/ORG`

    @classmethod
    def of(cls, api: str, where: str) -> RunnerScope:
        """`OWNER/REPO` (GITHUB_REPOSITORY) or `org:ORG`, under an http(s) `api`."""
        if not api.startswith(("https://", "http://")):
            raise InputError(f"GitHub API URL {api!r}: expected https://...")
        if where.startswith("org:") and where[4:]:
            return cls(api.rstrip("/"), f"orgs/{urllib.parse.quote(where[4:], safe='')}")
        owner, _, repo = where.partition("/")
        if not owner or not repo or "/" in repo:
            raise InputError(f"runner scope {where!r}: expected OWNER/REPO or org:ORG")
        quoted = "/".join(urllib.parse.quote(part, safe="") for part in (owner, repo))
        return cls(api.rstrip("/"), f"repos/{quoted}")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


def remove_runner_label(scope: RunnerScope, token: str, runner: str, label: str) -> str:
    """Take `label` off the runner named `runner`; what happened, as one line."""
    query = urllib.parse.urlencode({"name": runner})
    found = _call(scope, token, "GET", f"actions/runners?{query}")
    ids = [r["id"] for r in found.get("runners", []) if r.get("name") == runner]
    if len(ids) != 1:
        return f"runner {runner}: {len(ids)} runners of that name under {scope.owner}; left as is"
    path = f"actions/runners/{ids[0]}/labels/{urllib.parse.quote(label, safe='')}"
    try:
        _call(scope, token, "DELETE", path)
    except _NotFound:
        return f"runner {runner}: carries no label {label} (already removed)"
    return f"runner {runner}: label {label} removed"


class _NotFound(Exception):
    pass


def _call(scope: RunnerScope, token: str, method: str, path: str) -> dict[str, Any]:
    # The scheme is http(s): RunnerScope.of checks it.
    request = urllib.request.Request(  # noqa: S310
        f"{scope.api}/{scope.owner}/{path}",
        method=method,
        headers={
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {token}",
            "X-GitHub-Api-Version": API_VERSION,
        },
    )
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=TIMEOUT) as response:
            body = response.read(1 << 20)
    except urllib.error.HTTPError as error:
        if error.code == 404 and method == "DELETE":
            raise _NotFound from None
        raise EnvironmentUnavailable(
            f"GitHub API {method} {scope.owner}/{path}: HTTP {error.code} {error.reason}"
        ) from None
    except (urllib.error.URLError, OSError) as error:
        raise EnvironmentUnavailable(f"GitHub API {scope.api}: {error}") from None
    document = json.loads(body) if body else {}
    return document if isinstance(document, dict) else {}
