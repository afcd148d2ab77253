"""Cosign-style signatures and in-toto attestations, made and checked with real keys.

No cosign binary can be installed here (not in Debian 12, not on PyPI), so the test makes what
cosign makes, in cosign's formats, and checks it the way `cosign verify --key` does:

- a signature is cosign's "simple signing" payload (`critical.image.docker-manifest-digest`),
  signed ECDSA P-256/SHA-256, base64 in the layer annotation `dev.cosignproject.cosign/signature`
  (sigstore/cosign `pkg/oci/static`, `pkg/cosign/verify.go`);
- an attestation is a DSSE envelope (`application/vnd.dsse.envelope.v1+json`) of an in-toto
  Statement v1 whose subject digest is the image, signed over DSSE's PAE
  (secure-systems-lab/dsse `protocol.md`).

Each is attached both ways cosign and OCI 1.1 tools do: as an artifact manifest with `subject`
(the referrers API or `sha256-<hex>` referrers tag), and under cosign's tag schema
(`sha256-<hex>.sig` / `.att`).
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

from gpuship.reference import Repository, sha256_digest
from gpuship.registry.client import RegistryClient

SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
DSSE = "application/vnd.dsse.envelope.v1+json"
IN_TOTO = "application/vnd.in-toto+json"
SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
PREDICATE_ANNOTATION = "predicateType"
SLSA_PROVENANCE = "https://slsa.dev/provenance/v1"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY = b"{}"


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


@dataclass
class Signer:
    """An ECDSA P-256 key pair, as `cosign generate-key-pair` makes."""

    key: ec.EllipticCurvePrivateKey

    @classmethod
    def new(cls) -> Signer:
        return cls(ec.generate_private_key(ec.SECP256R1()))

    def sign(self, data: bytes) -> str:
        return base64.b64encode(self.key.sign(data, ec.ECDSA(hashes.SHA256()))).decode()

    def verify(self, data: bytes, signature: str) -> None:
        """Raises cryptography's InvalidSignature when `signature` is not ours over `data`."""
        self.key.public_key().verify(base64.b64decode(signature), data, ec.ECDSA(hashes.SHA256()))

    # -- payloads -----------------------------------------------------------------------------

    def signature_layer(self, repository: str, digest: str) -> tuple[bytes, dict[str, str]]:
        """cosign's simple-signing payload for `digest` and the layer annotations."""
        payload = _canonical(
            {
                "critical": {
                    "identity": {"docker-reference": repository},
                    "image": {"docker-manifest-digest": digest},
                    "type": "cosign container image signature",
                },
                "optional": None,
            }
        )
        return payload, {SIGNATURE_ANNOTATION: self.sign(payload)}

    def attestation_layer(self, repository: str, digest: str) -> tuple[bytes, dict[str, str]]:
        """A DSSE envelope of an in-toto statement about `digest` and the layer annotations."""
        statement = _canonical(
            {
                "_type": "https://in-toto.io/Statement/v1",
                "subject": [{"name": repository, "digest": {"sha256": digest.split(":", 1)[1]}}],
                "predicateType": SLSA_PROVENANCE,
                "predicate": {"buildDefinition": {"buildType": "https://gpuship.test/build"}},
            }
        )
        envelope = _canonical(
            {
                "payloadType": IN_TOTO,
                "payload": base64.b64encode(statement).decode(),
                "signatures": [{"keyid": "", "sig": self.sign(_pae(IN_TOTO, statement))}],
            }
        )
        return envelope, {PREDICATE_ANNOTATION: SLSA_PROVENANCE}

    # -- checks -------------------------------------------------------------------------------

    def verified_signature_digest(self, payload: bytes, annotations: dict[str, str]) -> str:
        """The image digest a verified simple-signing payload vouches for."""
        self.verify(payload, annotations[SIGNATURE_ANNOTATION])
        return str(json.loads(payload)["critical"]["image"]["docker-manifest-digest"])

    def verified_attestation_digest(self, envelope: bytes) -> str:
        """The subject digest of a verified DSSE-wrapped in-toto statement."""
        document = json.loads(envelope)
        statement = base64.b64decode(document["payload"])
        self.verify(_pae(document["payloadType"], statement), document["signatures"][0]["sig"])
        return "sha256:" + json.loads(statement)["subject"][0]["digest"]["sha256"]


@dataclass(frozen=True)
class Attached:
    """Digests of what was attached to one image."""

    signature_artifact: str
    attestation_artifact: str
    signature_tag: str
    attestation_tag: str


def _push_artifact(
    client: RegistryClient,
    repo: Repository,
    layer: tuple[bytes, dict[str, str]],
    layer_type: str,
    artifact_type: str | None,
    subject: dict[str, object] | None,
    tag: str | None,
) -> str:
    data, annotations = layer
    for blob in (EMPTY, data):
        client.upload_blob(repo, sha256_digest(blob), io.BytesIO(blob), len(blob))
    manifest: dict[str, object] = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": "application/vnd.oci.empty.v1+json",
            "digest": sha256_digest(EMPTY),
            "size": len(EMPTY),
        },
        "layers": [
            {
                "mediaType": layer_type,
                "digest": sha256_digest(data),
                "size": len(data),
                "annotations": annotations,
            }
        ],
    }
    if artifact_type is not None:
        manifest["artifactType"] = artifact_type
    if subject is not None:
        manifest["subject"] = subject
    body = _canonical(manifest)
    reference = repo.tag(tag) if tag else repo.at(sha256_digest(body))
    return client.put_manifest(reference, body, OCI_MANIFEST)


def attach(
    client: RegistryClient,
    repo: Repository,
    digest: str,
    media_type: str,
    size: int,
    signer: Signer,
) -> Attached:
    """Sign and attest `repo@digest` both ways (OCI 1.1 subject, cosign tag schema)."""
    name = f"{repo.registry}/{repo.name}"
    subject = {"mediaType": media_type, "digest": digest, "size": size}
    digest_tag = digest.replace(":", "-")
    signature = signer.signature_layer(name, digest)
    attestation = signer.attestation_layer(name, digest)
    signature_artifact = _push_artifact(
        client, repo, signature, SIMPLE_SIGNING, SIMPLE_SIGNING, subject, None
    )
    attestation_artifact = _push_artifact(client, repo, attestation, DSSE, IN_TOTO, subject, None)
    # Without the referrers API (registry:2) the client keeps the referrers tag, as oras does.
    referrers = []
    for artifact, artifact_type in (
        (signature_artifact, SIMPLE_SIGNING),
        (attestation_artifact, IN_TOTO),
    ):
        fetched = client.get_manifest(repo.at(artifact))
        referrers.append(
            {
                "mediaType": OCI_MANIFEST,
                "digest": artifact,
                "size": len(fetched.data),
                "artifactType": artifact_type,
            }
        )
    index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": referrers}
    client.put_manifest(repo.tag(digest_tag), _canonical(index), OCI_INDEX)
    return Attached(
        signature_artifact=signature_artifact,
        attestation_artifact=attestation_artifact,
        signature_tag=_push_artifact(
            client,
            repo,
            signer.signature_layer(name, digest),
            SIMPLE_SIGNING,
            None,
            None,
            f"{digest_tag}.sig",
        ),
        attestation_tag=_push_artifact(
            client,
            repo,
            signer.attestation_layer(name, digest),
            DSSE,
            None,
            None,
            f"{digest_tag}.att",
        ),
    )
