"""What a promote or rollback would do, read from the registry without writing (`--dry-run`).

The plan is made with the reads the real run starts with (source manifest, target tags) plus
HEAD requests for each manifest and blob the copy would need, so it shows every tag's old and
new digest, every blob to mount or stream, every manifest to put, the referrers to copy, and
whether a release record would be added. It sends GET and HEAD requests only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.manifest import ImageIndex, parse_manifest
from gpuship.release.policy import TagAction, TagStep, plan_tags
from gpuship.release.promote import ReleaseRequest
from gpuship.release.referrers import ReferrerCopy, plan_referrers


@dataclass(frozen=True)
class ContentStep:
    """One blob or manifest the copy to the target needs, and how it would get there."""

    kind: str  # blob | manifest
    digest: str
    size: int
    action: str  # exists | mount | copy (blobs) ; exists | put (manifests)


@dataclass
class ReleasePlan:
    """A release that was not carried out: what it would change."""

    request: ReleaseRequest
    digest: str
    media_type: str
    steps: list[TagStep]
    content: list[ContentStep] = field(default_factory=list)
    referrers: list[ReferrerCopy] = field(default_factory=list)

    @property
    def conflicts(self) -> list[TagStep]:
        return [step for step in self.steps if step.action is TagAction.CONFLICT]

    @property
    def writes(self) -> list[TagStep]:
        return [step for step in self.steps if step.writes]


def plan_release(client: RegistryClient, request: ReleaseRequest) -> ReleasePlan:
    """The plan of `release(client, request, ...)`, made without writing anything."""
    assert request.source.digest is not None, "releases are by digest"
    manifest = client.get_manifest(request.source)
    target = request.target
    before = {}
    for tag_request in request.tags:
        head = client.head_manifest(target.tag(tag_request.tag))
        before[tag_request.tag] = head.digest if head is not None else None
    plan = ReleasePlan(
        request=request,
        digest=manifest.digest,
        media_type=manifest.media_type,
        steps=plan_tags(request.tags, before, manifest.digest),
    )
    if target != request.source.repository and not plan.conflicts:
        source = request.source.repository
        _plan_tree(
            client, source, target, manifest.digest, manifest.data, manifest.media_type, plan
        )
        plan.referrers = plan_referrers(client, source, target, manifest.digest)
    return plan


def _plan_tree(
    client: RegistryClient,
    source: Repository,
    target: Repository,
    digest: str,
    data: bytes,
    media_type: str,
    plan: ReleasePlan,
) -> None:
    """Mirror of `copy_manifest_tree`: children before parents, stop where the target has it."""
    if client.head_manifest(target.at(digest)) is not None:
        plan.content.append(ContentStep("manifest", digest, len(data), "exists"))
        return
    document = parse_manifest(data, media_type)
    if isinstance(document, ImageIndex):
        for child in document.manifests:
            fetched = client.get_manifest(source.at(child.digest))
            _plan_tree(client, source, target, child.digest, fetched.data, fetched.media_type, plan)
    else:
        same_registry = source.registry == target.registry
        for blob in document.blobs:
            if client.blob_exists(target, blob.digest):
                action = "exists"
            else:
                action = "mount" if same_registry else "copy"
            plan.content.append(ContentStep("blob", blob.digest, blob.size, action))
    plan.content.append(ContentStep("manifest", digest, len(data), "put"))
