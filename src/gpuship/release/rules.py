"""Catalog entries for the findings of promote, rollback, history and prune."""

from __future__ import annotations

from gpuship.report import Rule, Severity

IMMUTABLE_CONFLICT = Rule(
    id="GSR101",
    name="release-immutable-conflict",
    category="release",
    severity=Severity.ERROR,
    summary="An immutable (version) tag already points at a different digest.",
    rationale=(
        "A published version tag that changes under users breaks reproducible deploys and any "
        "signature or SBOM tied to the old digest. Promotion refuses before writing anything."
    ),
    fix="Publish a new version tag, or check that the right candidate digest was promoted.",
    bad_example="gpuship promote reg/app@sha256:new --tag 1.4.0   # 1.4.0 already released",
    good_example="gpuship promote reg/app@sha256:new --tag 1.4.1 --move stable",
    configurable=False,
)

RELEASE_FAILED = Rule(
    id="GSR102",
    name="release-write-failed",
    category="release",
    severity=Severity.ERROR,
    summary="A tag or record write failed part-way; tags this run wrote were put back.",
    rationale=(
        "Promotion is all-or-nothing: a half-moved release is worse than none. Only tags this "
        "run wrote, and still hold what it wrote, are put back; the message says what each tag "
        "holds now."
    ),
    fix="Fix the registry problem named in the message and run the same command again.",
    configurable=False,
)

RESTORE_INCOMPLETE = Rule(
    id="GSR103",
    name="release-restore-incomplete",
    category="release",
    severity=Severity.ERROR,
    summary="After a failed release a tag could not be put back, or could not be read.",
    rationale=(
        "The registry failed during the restore too: the tag still points at the promoted "
        "digest, or where it points is unknown."
    ),
    fix=(
        "Once the registry answers again, run the same promote (it completes the release) or "
        "the rollback command shown for the tag."
    ),
    configurable=False,
)

CONCURRENT_WRITER = Rule(
    id="GSR104",
    name="release-concurrent-writer",
    category="release",
    severity=Severity.WARNING,
    summary="Another writer moved a tag of this release while it ran.",
    rationale=(
        "Registries have no compare-and-swap on tags: two releases of one repository at once "
        "both write, the later one wins. gpuship records both and never moves a tag back over "
        "another writer's change; the message says where the tag is now."
    ),
    fix=(
        "Check which release the tag should carry (`gpuship history REPO:TAG`); serialise "
        "release workflows with a `concurrency:` group per repository."
    ),
)

REFERRER_TAG_KEPT = Rule(
    id="GSR105",
    name="release-referrer-tag-kept",
    category="release",
    severity=Severity.WARNING,
    summary="The target already had a signature/attestation tag for the image on other content.",
    rationale=(
        "promote --to copies cosign's sha256-<hex>.sig/.att/.sbom tags with the image. When the "
        "target's tag holds other content (signed there separately), it is kept rather than "
        "overwritten, so the candidate's signatures are not on the promoted tag."
    ),
    fix="Verify with the target's signatures, or sign the promoted digest again in the target.",
)

RECORD_NOT_FOLLOWED = Rule(
    id="GSR106",
    name="release-record-not-followed",
    category="release",
    severity=Severity.WARNING,
    summary="A release record or intent contradicts itself, its signature or the chain of records.",
    rationale=(
        "Anyone who can push a tag to the repository can plant a record. A record whose tags go "
        "elsewhere than its digest, one not signed as release.signatures requires, or a move "
        "from a digest no other record shows the tag held is never followed: rollback does not "
        "go back from it and a re-run does not complete it."
    ),
    fix=(
        "Find who pushed the record tag (the registry's audit log); remove it if it is forged. "
        "A move made outside gpuship: roll back with --to DIGEST if that digest is trusted."
    ),
)

PRUNE_DELETE = Rule(
    id="GSR201",
    name="prune-delete",
    category="release",
    severity=Severity.NOTE,
    summary="Retention selected a digest (and its tags) for deletion.",
    rationale="Nothing protected, kept by a rule, or referenced by a kept index is selected.",
    fix="Add a keep rule or a protect pattern if the digest must stay.",
)

PRUNE_FAILED = Rule(
    id="GSR202",
    name="prune-delete-failed",
    category="release",
    severity=Severity.ERROR,
    summary="Deleting a selected digest failed.",
    rationale="The registry refused or failed; the digest and its tags are still there.",
    fix="Check delete permissions (registry:2 needs storage.delete.enabled) and run again.",
    configurable=False,
)

PRUNE_RESTORED = Rule(
    id="GSR203",
    name="prune-put-back",
    category="release",
    severity=Severity.NOTE,
    summary="A digest was deleted while a release claimed it, and prune put it back.",
    rationale=(
        "Registries have no compare-and-swap: a promote or rollback can tag a digest between "
        "prune's last check and its DELETE taking effect. After each delete prune reads the "
        "release history again and puts back the manifest and the tags that release wrote."
    ),
    fix=(
        "Nothing to do; to avoid the race, run retention and releases of one repository in "
        "one `concurrency:` group (docs/operations/registry-access.md)."
    ),
    configurable=False,
)

RULES: tuple[Rule, ...] = (
    IMMUTABLE_CONFLICT,
    RELEASE_FAILED,
    RESTORE_INCOMPLETE,
    CONCURRENT_WRITER,
    REFERRER_TAG_KEPT,
    RECORD_NOT_FOLLOWED,
    PRUNE_DELETE,
    PRUNE_FAILED,
    PRUNE_RESTORED,
)
