"""What the image's content needs from the host, against what its env and labels claim.

The effective CUDA is the highest version anything inside needs (cuda-compat.md §5.3: a
`cu128` torch wheel in a `12.4` base image needs a 12.8 driver, and the base's
`NVIDIA_REQUIRE_CUDA=cuda>=12.4` under-states it). A claim weaker than the content is an
error: the driver check would pass a host where the image then fails. Minimum drivers come
from the CUDA knowledge base (`gpuship.cuda`), never from numbers written here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuship.cuda.arch import (
    ArchTarget,
    ComputeCapability,
    CoverageKind,
    kernel_coverage,
    parse_arch_list,
)
from gpuship.cuda.declared import Claim, claimed_cuda, claims_enforced, cuda_claims
from gpuship.cuda.drivers import min_driver_for
from gpuship.cuda.errors import InvalidVersion, UnknownVersion
from gpuship.cuda.version import Version
from gpuship.image.analysis import ScannedLibrary
from gpuship.image_result import CudaEvidence, TargetCoverage
from gpuship.labels import LABEL_MIN_DRIVER


@dataclass(frozen=True)
class WeakClaim:
    claim: Claim
    message: str


@dataclass(frozen=True)
class CudaRequirement:
    effective: str | None
    deciding: CudaEvidence | None
    min_driver: str | None
    unknown: str | None  # why no minimum driver could be given
    claims: tuple[Claim, ...]
    weak_claims: tuple[WeakClaim, ...]


def _version(text: str) -> Version | None:
    try:
        return Version.parse(text)
    except InvalidVersion:
        return None


def cuda_requirement(
    evidence: Sequence[CudaEvidence], env: Mapping[str, str], labels: Mapping[str, str]
) -> CudaRequirement:
    """Effective CUDA, its minimum driver, and every claim that states less."""
    claims = cuda_claims(env, labels)
    ranked = [
        (version.major_minor(), item) for item in evidence if (version := _version(item.version))
    ]
    if not ranked:
        return CudaRequirement(None, None, None, None, claims, ())
    effective, deciding = max(ranked, key=lambda pair: pair[0])
    min_driver: Version | None = None
    unknown = None
    try:
        min_driver = min_driver_for(effective)
    except UnknownVersion as error:
        unknown = str(error)
    weak = []
    if claims_enforced(env):
        for claim in claims:
            if claim.source == LABEL_MIN_DRIVER:
                claimed_driver = _version(claim.value.strip())
                if (
                    min_driver is not None
                    and claimed_driver is not None
                    and claimed_driver < min_driver
                ):
                    weak.append(
                        WeakClaim(
                            claim,
                            f"{claim.source}={claim.value} but {deciding.source} at "
                            f"{deciding.path} needs CUDA {effective}, i.e. driver >= {min_driver}",
                        )
                    )
                continue
            claimed = claimed_cuda(claim)
            if claimed is not None and claimed < effective:
                weak.append(
                    WeakClaim(
                        claim,
                        f"{claim.source}={claim.value} claims CUDA {claimed} but {deciding.source} "
                        f"at {deciding.path} needs CUDA {effective}",
                    )
                )
    return CudaRequirement(
        effective=str(effective),
        deciding=deciding,
        min_driver=str(min_driver) if min_driver is not None else None,
        unknown=unknown,
        claims=claims,
        weak_claims=tuple(weak),
    )


def library_targets(library: ScannedLibrary) -> tuple[ArchTarget, ...]:
    return parse_arch_list([*library.sass, *library.ptx])


def target_coverage(target: str, libraries: Iterable[ScannedLibrary]) -> TargetCoverage:
    """Whether every GPU library can run on `target` (sm_XX), by SASS or PTX JIT: the
    libraries (absolute paths) with no kernel for it, and those that run it only by PTX JIT."""
    capability = ComputeCapability.parse(target.rstrip("af"))
    missing, ptx_only = [], []
    for library in libraries:
        coverage = kernel_coverage(capability, library_targets(library))
        if coverage.kind == CoverageKind.NONE:
            missing.append("/" + library.path)
        elif coverage.kind == CoverageKind.PTX_JIT:
            ptx_only.append("/" + library.path)
    return TargetCoverage(target, tuple(missing), tuple(ptx_only))


def sm_targets(targets: Iterable[ArchTarget]) -> tuple[str, ...]:
    """The `sm_XX` GPUs arch targets promise kernels for (the `io.gpuship.arch-list` label's,
    read by `compat.needs.labelled_needs`), sorted."""
    return tuple(sorted({f"sm_{t.cc.major}{t.cc.minor}" for t in targets}))
