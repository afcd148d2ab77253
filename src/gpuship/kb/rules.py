"""The kb stage's rule catalog (`gpuship kb`): ids `GSK` + three digits.

The first digit groups the rules as in the other stages' catalogs (1: a check of an image's
NVIDIA_REQUIRE_* against a host, 2: a gap in the knowledge base). The names are the ids
these findings had before they joined the catalog, so configs naming them keep working.
"""

from __future__ import annotations

from gpuship.report import Rule, Severity

UNSATISFIED = Rule(
    id="GSK101",
    name="cuda-require-unsatisfied",
    category="cuda",
    severity=Severity.ERROR,
    summary="The image's NVIDIA_REQUIRE_* conditions are not met by this host.",
    rationale=(
        "nvidia-container-cli refuses to start such a container in legacy mode, and CDI mode "
        "starts it without checking, so CUDA fails later inside the job."
    ),
    fix="Install a driver that satisfies the condition, or use an image built for an older CUDA.",
    bad_example="NVIDIA_REQUIRE_CUDA=cuda>=12.4 on driver 535 (CUDA 12.2), GeForce GPU",
    good_example="NVIDIA_REQUIRE_CUDA=cuda>=12.2 on driver 535 (CUDA 12.2)",
)

UNKNOWN_RELEASE = Rule(
    id="GSK201",
    name="cuda-unknown-release",
    category="cuda",
    severity=Severity.WARNING,
    summary="The CUDA release has no recorded minimum driver; only its family floor is known.",
    fix="Use a CUDA release listed by `gpuship kb show`, or update gpuship.",
)

RULES: tuple[Rule, ...] = (UNSATISFIED, UNKNOWN_RELEASE)
