"""Catalog entries for the findings of the matrix and lock commands."""

from __future__ import annotations

from gpuship.report import Rule, Severity

INVALID_CELL = Rule(
    id="GSB101",
    name="matrix-invalid-cell",
    category="cuda",
    severity=Severity.ERROR,
    summary="A matrix combination cannot be built or cannot run as declared.",
    rationale=(
        "A torch release without a wheel for that CUDA, an SM target the CUDA release cannot "
        "compile, or a base image that is not pinned in gpuship.lock gives an image that fails "
        "at build time or, worse, at run time on the GPU."
    ),
    fix="Exclude the combination, change its versions, or run `gpuship lock` for a new base.",
    bad_example="axes: {cuda: ['11.8'], torch: ['2.8.0']}",
    good_example="axes: {cuda: ['12.8'], torch: ['2.8.0']}",
)

UNKNOWN_VERSION = Rule(
    id="GSB102",
    name="matrix-unknown-version",
    category="cuda",
    severity=Severity.NOTE,
    summary="A CUDA or torch version the knowledge base does not know was allowed.",
    rationale="Without knowledge base data the image carries no min-driver or arch-list label.",
    fix="Update gpuship, or give the labels yourself through `labels:`.",
)

MATRIX_TOO_LARGE = Rule(
    id="GSB103",
    name="matrix-too-large",
    category="waste",
    severity=Severity.WARNING,
    summary="The matrix has more cells than GitHub runs for one job (256).",
    rationale="GitHub Actions generates at most 256 jobs per matrix (docs.github.com, matrix).",
    fix="Split the images over several jobs (`gpuship matrix --image NAME`) or exclude cells.",
)

LOCK_STALE = Rule(
    id="GSB201",
    name="lock-stale",
    category="pinning",
    severity=Severity.ERROR,
    summary="gpuship.lock does not match the bases the matrix uses or their current digests.",
    rationale="A stale lock builds from bases nobody reviewed, or fails to build new cells.",
    fix="Run `gpuship lock` and commit gpuship.lock.",
)

ABOVE_DRIVER_FLOOR = Rule(
    id="GSB104",
    name="matrix-above-driver-floor",
    category="cuda",
    severity=Severity.ERROR,
    summary="A cell needs a driver above every driver floor of `verify.driver-floor`.",
    rationale=(
        "No pool agrees to keep the driver the cell's CUDA release needs, so no runner is sure "
        "to run the image it builds (PTX JIT and newer APIs fail on an older driver)."
    ),
    fix="Raise the floor of a pool (after upgrading its hosts) or build the cell for an older "
    "CUDA release.",
    bad_example="verify: {driver-floor: {default: '570.86.10'}}  # with a CUDA 13.0 cell",
    good_example="verify: {driver-floor: {default: '570.86.10', pools: {gpu-h100: '580.65.06'}}}",
)

RULES: tuple[Rule, ...] = (
    INVALID_CELL,
    UNKNOWN_VERSION,
    MATRIX_TOO_LARGE,
    ABOVE_DRIVER_FLOOR,
    LOCK_STALE,
)
