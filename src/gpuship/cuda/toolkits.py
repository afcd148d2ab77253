"""Which SM targets the nvcc of each CUDA release can compile (additions and removals)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from gpuship.cuda.arch import ArchTarget, ComputeCapability, as_capability
from gpuship.cuda.errors import UnknownVersion
from gpuship.cuda.version import Version, as_version

# `knowledge_base` is imported where it is called: a lint that needs no CUDA fact starts
# without the knowledge base's row types (issue #37).


@dataclass(frozen=True)
class _TargetSpan:
    cc: ComputeCapability
    added: Version | None
    seen_in: Version | None
    removed: Version | None


@functools.cache
def _spans() -> tuple[_TargetSpan, ...]:
    from gpuship.cuda.knowledge import knowledge_base

    def version(text: str | None) -> Version | None:
        return Version.parse(text) if text else None

    return tuple(
        _TargetSpan(
            ComputeCapability.parse(r.sm), version(r.added), version(r.seen_in), version(r.removed)
        )
        for r in knowledge_base().arch_support.targets
    )


def _covered(cuda: str | Version) -> Version:
    from gpuship.cuda.knowledge import knowledge_base

    support = knowledge_base().arch_support
    version = as_version(cuda, "CUDA version").major_minor()
    first, last = Version.parse(support.first_release), Version.parse(support.covered_through)
    if not first <= version <= last:
        raise UnknownVersion(
            "cuda", str(version), f"arch support is recorded for CUDA {first} to {last}"
        )
    return version


def _compiles(span: _TargetSpan, cuda: Version) -> bool | None:
    if span.removed is not None and cuda >= span.removed:
        return False
    if span.added is not None:
        return cuda >= span.added
    # Introduction release unknown: known present from `seen_in` on, unknown before it.
    if span.seen_in is not None and cuda >= span.seen_in:
        return True
    return None


def compilable_targets(cuda: str | Version) -> tuple[ComputeCapability, ...]:
    """SM targets nvcc of CUDA `cuda` can compile (those known for that release), ascending."""
    version = _covered(cuda)
    return tuple(sorted(s.cc for s in _spans() if _compiles(s, version)))


def can_compile(cuda: str | Version, target: ArchTarget | ComputeCapability | str) -> bool:
    """Whether nvcc of CUDA `cuda` can emit code for `target`.

    Raises UnknownVersion for a CUDA release outside the recorded range, an SM the knowledge
    base does not list, or an SM whose first release is not known and `cuda` predates the
    release it was seen in.
    """
    from gpuship.cuda.knowledge import knowledge_base

    version = _covered(cuda)
    if isinstance(target, ArchTarget):
        cc = target.cc
        if target.variant == "f":
            since = Version.parse(knowledge_base().arch_support.family_variants_since)
            if version < since:
                return False
    else:
        cc = as_capability(target)
    for span in _spans():
        if span.cc == cc:
            answer = _compiles(span, version)
            if answer is None:
                raise UnknownVersion(
                    "arch",
                    cc.sm,
                    f"first CUDA release that compiles it is not recorded; "
                    f"known from CUDA {span.seen_in}",
                )
            return answer
    raise UnknownVersion("arch", cc.sm)
