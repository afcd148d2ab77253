"""Deleting GHCR package versions through the GitHub Packages REST API.

GHCR answers 405 to OCI manifest DELETE (reference §1.11), so prune deletes there with
`DELETE /{orgs|users}/{owner}/packages/container/{package}/versions/{id}`; the version id of a
digest comes from the versions list (`name` = manifest digest), paged with `Link`
(docs.github.com/rest/packages). Package names containing `/` are URL-encoded.

GitHub's API is how this one registry deletes, so it is part of the registry adapter: the same
transport (deadline, retries, bounded answers) and the same typed errors as the OCI client.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

import requests

from gpuship.errors import InputError, RegistryUnavailable
from gpuship.redaction import hold, redact_credentials, shown
from gpuship.reference import Repository
from gpuship.registry.deadline import Deadline
from gpuship.registry.errors import NotFound, RegistryAuthError, RegistryRequestError
from gpuship.registry.origin import Origin, next_page
from gpuship.registry.retry import RetryPolicy
from gpuship.registry.transport import Transport

API_VERSION = "2022-11-28"


class GhcrPackages:
    """The versions of one GHCR container package."""

    def __init__(
        self,
        repo: Repository,
        environ: Mapping[str, str],
        session: requests.Session | None = None,
        retry: RetryPolicy | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        token = environ.get("GITHUB_TOKEN")
        if not token:
            raise RegistryAuthError(
                f"deleting from {repo} needs GITHUB_TOKEN with packages: write (and the repository "
                "given Admin access to the package)",
                status=401,
            )
        owner, _, package = repo.name.partition("/")
        if not package:
            raise RegistryRequestError(f"{repo}: GHCR names are OWNER/PACKAGE", status=400)
        hold(token)
        self._api = environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
        self._package = quote(package, safe="")
        self._owner = owner
        self._session = session or requests.Session()
        self._session.headers.update(
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
            }
        )
        self._transport = Transport(self._session, retry or RetryPolicy(), deadline=deadline)
        self._base: str | None = None
        self._ids: dict[str, int] | None = None

    def _check(self, response: requests.Response, what: str) -> None:
        status = response.status_code
        if status < 300:
            return
        text = redact_credentials(" ".join(response.text.split()))[:200]
        if status >= 500 or status == 429:
            raise RegistryUnavailable(f"GitHub API answered {status} to {what}: {text}")
        if status in (401, 403):
            raise RegistryAuthError(f"GitHub API denied {what} ({status}): {text}", status=status)
        if status == 404:
            raise NotFound(f"GitHub API: {what} not found", status=status)
        raise RegistryRequestError(f"GitHub API refused {what} ({status}): {text}", status=status)

    def _versions_base(self) -> str:
        if self._base is not None:
            return self._base
        for kind in ("orgs", "users"):
            base = f"{self._api}/{kind}/{self._owner}/packages/container/{self._package}/versions"
            response = self._transport.send("GET", base, params={"per_page": "1"})
            with response:
                if response.status_code == 404:
                    continue
                self._check(response, f"GET {base}")
            self._base = base
            return base
        raise NotFound(f"GitHub has no container package {self._owner}/{self._package}", status=404)

    def version_ids(self) -> dict[str, int]:
        """Manifest digest -> package version id, for every version."""
        if self._ids is not None:
            return self._ids
        ids: dict[str, int] = {}
        url: str | None = self._versions_base()
        params: dict[str, str] | None = {"per_page": "100"}
        read: set[str] = set()
        while url:
            response = self._transport.send("GET", url, params=params)
            with response:
                self._check(response, f"GET {url}")
                for version in response.json():
                    ids[str(version["name"])] = int(version["id"])
                read.add(response.url)
                link = response.links.get("next", {}).get("url")
                url = self._next_page(response.url, link, read) if link else None
            params = None
        self._ids = ids
        return ids

    def _next_page(self, page: str, link: str, read: set[str]) -> str:
        """The page a `Link: rel="next"` names, if it may be read: on the API's own origin
        (the token in every request goes nowhere else) and not read before."""
        target = next_page(page, link, read, "GitHub API's versions list")
        try:
            home = Origin.of(target) == Origin.of(self._api)
        except InputError:  # not an http(s) URL: the API's answer, not the user's input
            home = False
        if not home:
            raise RegistryUnavailable(
                f"GitHub API answered a Link outside {Origin.of(self._api)}, {shown(target)}: "
                "not followed (the token goes only to GITHUB_API_URL)"
            )
        return target

    def delete(self, digest: str, tags: tuple[str, ...]) -> None:
        """Delete the package version holding `digest` (and with it, its tags)."""
        version = self.version_ids().get(digest)
        if version is None:
            raise NotFound(
                f"GHCR has no version {digest} of {self._owner}/{self._package}", status=404
            )
        url = f"{self._versions_base()}/{version}"
        response = self._transport.send("DELETE", url)
        with response:
            self._check(response, f"DELETE {url}")
