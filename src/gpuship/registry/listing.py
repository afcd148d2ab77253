"""Listing what a registry holds: a repository's tags, and the referrers of a manifest (the
referrers API, else the `sha256-<hex>` tag schema of distribution-spec v1.1)."""

from __future__ import annotations

from gpuship.documents import load_json
from gpuship.errors import InputError
from gpuship.reference import Reference, Repository
from gpuship.registry.errors import NotFound, RegistryRequestError
from gpuship.registry.manifest import MEDIA_OCI_INDEX, Descriptor, ImageIndex, parse_manifest
from gpuship.registry.origin import next_page
from gpuship.registry.reads import RegistryReads
from gpuship.registry.session import PULL
from gpuship.registry.transport import document_of


class RegistryListing(RegistryReads):
    """Tags and referrers, followed across pages."""

    def list_tags(self, repo: Repository, *, page_size: int | None = None) -> list[str]:
        """Every tag of `repo`: follows `Link: rel="next"`, else pages with `n`/`last`."""
        tags: list[str] = []
        seen: set[str] = set()
        read: set[str] = set()
        url = f"/v2/{repo.name}/tags/list"
        params: dict[str, str] | None = {"n": str(page_size)} if page_size else None
        while True:
            response = self._request(
                "GET", repo, url, access={repo.name: PULL}, ok=(200,), params=params
            )
            with response, document_of(response) as data:
                body = load_json(data, f"tag list of {repo}", self.limits)
                if not isinstance(body, dict):
                    raise InputError(f"tag list of {repo} is not a JSON object")
                next_link = response.links.get("next", {}).get("url")
                page_url = response.url
            read.add(page_url)
            page = [t for t in (body.get("tags") or []) if isinstance(t, str)]
            fresh = [t for t in page if t not in seen]
            tags += fresh
            seen.update(fresh)
            if next_link:
                url, params = next_page(page_url, next_link, read, f"tag list of {repo}"), None
            elif page_size and len(page) >= page_size and fresh:
                params = {"n": str(page_size), "last": page[-1]}
            else:
                return tags

    def referrers(self, ref: Reference, *, artifact_type: str | None = None) -> list[Descriptor]:
        """Manifests whose `subject` is `ref.digest`: referrers API, else the `sha256-…` tag."""
        if ref.digest is None:
            raise NotFound(f"{ref}: referrers need a digest", status=400)
        url = f"/v2/{ref.name}/referrers/{ref.digest}"
        params = {"artifactType": artifact_type} if artifact_type else None
        found: list[Descriptor] = []
        read: set[str] = set()
        while True:
            response = self._request(
                "GET",
                ref.repository,
                url,
                access={ref.name: PULL},
                ok=(200, 404),
                params=params,
                headers={"Accept": MEDIA_OCI_INDEX},
            )
            with response:
                if response.status_code == 404:
                    return found or self._referrers_by_tag(ref, artifact_type)
                filtered = "artifactType" in response.headers.get("OCI-Filters-Applied", "")
                with document_of(response) as data:
                    index = _parse_index(data, f"referrers of {ref}")
                next_link = response.links.get("next", {}).get("url")
                page_url = response.url
            read.add(page_url)
            found += [
                d
                for d in index.manifests
                if filtered or artifact_type is None or d.artifact_type == artifact_type
            ]
            if not next_link:
                return found
            url, params = next_page(page_url, next_link, read, f"referrers of {ref}"), None

    def has_referrers_api(self, ref: Reference) -> bool:
        """True when the registry answers the referrers API for `ref` (a digest reference)."""
        response = self._request(
            "GET",
            ref.repository,
            f"/v2/{ref.name}/referrers/{ref.identifier}",
            access={ref.name: PULL},
            ok=(200, 404),
            headers={"Accept": MEDIA_OCI_INDEX},
        )
        response.close()
        return response.status_code == 200

    def _referrers_by_tag(self, ref: Reference, artifact_type: str | None) -> list[Descriptor]:
        assert ref.digest is not None
        algorithm, _, encoded = ref.digest.partition(":")
        try:
            fetched = self.get_manifest(ref.repository.tag(f"{algorithm}-{encoded}"[:128]))
        except NotFound:
            return []
        index = _parse_index(fetched.data, f"referrers tag of {ref}")
        return [
            d for d in index.manifests if artifact_type is None or d.artifact_type == artifact_type
        ]


def _parse_index(data: bytes, where: str) -> ImageIndex:
    document = parse_manifest(data, MEDIA_OCI_INDEX)
    if not isinstance(document, ImageIndex):
        raise RegistryRequestError(f"{where} is not an image index", status=200)
    return document
