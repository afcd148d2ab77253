"""Every bound gpuship puts on what it reads, in one place.

Hostile input is normal input (DESIGN.md): a size, nesting depth, count or expansion length
that could grow without bound has a named limit here, with a default far above what real
images, Dockerfiles and configs need. A limit reached is a clear error or finding that names
the limit, never a traceback, a hang or a blow-up. Users change them in `gpuship.yaml`:

    limits:
      layer-max-entries: 2000000

The defaults validate without pydantic (the `lint` fast path imports nothing heavy): the
`limits:` section is this dataclass, which pydantic validates directly through
`__pydantic_config__` and the per-field metadata (description, bounds).

The limits on `gpuship.yaml` itself (`yaml-*`) apply before that file is read, so only their
defaults and `GPUSHIP_LIMITS__*` environment variables set them for it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final

KIB: Final = 1 << 10
MIB: Final = 1 << 20
GIB: Final = 1 << 30


def _limit(default: int, description: str) -> Any:
    # pydantic reads `description` and `gt` from the metadata of a stdlib dataclass field.
    return dataclasses.field(default=default, metadata={"description": description, "gt": 0})


_BEFORE_CONFIG = (
    "gpuship.yaml itself is read before its limits are known: only the default or a "
    "GPUSHIP_LIMITS__* variable applies to it."
)


def _kebab(name: str) -> str:
    return name.replace("_", "-")


@dataclass(frozen=True)
class Limits:
    """Bounds on sizes, depths, counts and lengths of everything gpuship reads."""

    # pydantic's config for this stdlib dataclass: strict keys, kebab-case in YAML. A plain
    # dict (pydantic's ConfigDict is a TypedDict) keeps pydantic out of this module.
    __pydantic_config__ = {
        "extra": "forbid",
        "frozen": True,
        "alias_generator": _kebab,
        "populate_by_name": True,
    }

    # JSON documents: manifests, indexes, image configs, audits, matrices, `--include`.
    manifest_max_bytes: int = _limit(
        4 * MIB,
        "Largest manifest or index read (OCI layout index.json and blobs, docker-archive "
        "manifest.json, registry manifests), in bytes. 4 MiB holds thousands of descriptors.",
    )
    json_max_bytes: int = _limit(
        16 * MIB,
        "Largest other JSON document read (image config blob, audit file, matrix file), in bytes.",
    )
    json_max_depth: int = _limit(
        64,
        "Deepest nesting of arrays and objects in any JSON document (real ones nest under 10).",
    )
    json_max_items: int = _limit(
        200_000,
        "Most commas plus opening brackets in one JSON document (strings included): bounds "
        "the objects a small but dense document can make.",
    )
    registry_error_body_max_bytes: int = _limit(
        64 * KIB,
        "Most bytes of a registry's error response read to report it.",
    )
    # YAML: gpuship.yaml, the matrix targets file, gpuship.lock, container specs.
    yaml_max_bytes: int = _limit(
        4 * MIB,
        "Largest YAML file read (gpuship.yaml, targets, gpuship.lock), in bytes. " + _BEFORE_CONFIG,
    )
    yaml_max_depth: int = _limit(
        64, "Deepest nesting of mappings and sequences in YAML. " + _BEFORE_CONFIG
    )
    yaml_max_nodes: int = _limit(
        200_000,
        "Most YAML nodes, counting each alias as the nodes it stands for (an alias bomb of "
        "a few lines stands for billions). " + _BEFORE_CONFIG,
    )
    # Image layers.
    layer_max_bytes: int = _limit(
        128 * GIB, "Most decompressed bytes read from one layer; past it the layer is unchecked."
    )
    layer_max_ratio: int = _limit(
        100,
        "Most decompressed bytes per compressed byte of a layer, checked once the layer "
        "passes layer-ratio-after-bytes: a gzip or zstd bomb of zeros is stopped early.",
    )
    layer_ratio_after_bytes: int = _limit(
        256 * MIB, "Decompressed bytes of a layer before layer-max-ratio is checked."
    )
    layer_max_entries: int = _limit(
        250_000,
        "Most tar entries (files, directories, links) in one layer; inspect takes about 32 "
        "microseconds of CPU an entry (bench/limits), so the default bounds one layer to "
        "about 8 seconds.",
    )
    image_max_entries: int = _limit(
        1_000_000, "Most tar entries in all the layers of one image together."
    )
    tar_header_max_bytes: int = _limit(
        1 * MIB, "Largest pax header or GNU long name in a layer, in bytes."
    )
    # Dockerfile and build context.
    dockerfile_max_stages: int = _limit(
        1_000,
        "Most build stages (FROM lines) in a Dockerfile that lint checks; a file with more is "
        "reported (GSL003) and not checked. Lint is linear in the file, except that each "
        "target walks the stages it builds: the default bounds the worst file to seconds.",
    )
    targets_max_instructions: int = _limit(
        100_000,
        "Most instructions lint checks over all the targets of one Dockerfile together: a "
        "stage counts once for each target that builds it (500 targets on one 500-stage chain "
        "are 250,000 stages). Targets past it are reported (GSL003) and not checked; the "
        "first one (the last stage) always is.",
    )
    context_file_max_bytes: int = _limit(
        2 * MIB,
        "Largest build-context file read as text (requirements, scripts, .dockerignore); "
        "a larger one is reported and not read.",
    )
    script_max_bytes: int = _limit(
        256 * KIB,
        "Largest script from the build context that lint follows from a RUN (`RUN "
        "./install.sh`); shell parsing is lint's slowest step, about a second for 256 KiB.",
    )
    run_max_commands: int = _limit(
        5_000,
        "Most shell commands lint reads in one RUN, the scripts it runs included; the rest "
        "of a longer one is reported and not checked.",
    )
    context_max_entries: int = _limit(
        200_000, "Most build-context entries walked (a home directory given by mistake)."
    )
    dockerignore_max_patterns: int = _limit(
        10_000, "Most patterns used from one .dockerignore file."
    )
    expansion_max_bytes: int = _limit(
        128 * KIB,
        "Longest ARG/ENV value after $VAR expansion; Linux refuses a longer environment "
        "string to every RUN (MAX_ARG_STRLEN), so a longer one is reported and left unknown.",
    )
    expansion_max_total_bytes: int = _limit(
        16 * MIB,
        "Most bytes $VAR expansion adds to the ARG and ENV values of one Dockerfile together "
        "(20,000 ARGs each one byte longer than the one before hold 200 MB); past it, the "
        "first value is reported and every later one that grows is left unknown.",
    )
    # Probe.
    requests_file_max_bytes: int = _limit(
        64 * MIB,
        "Largest probe requests file (probe.request.requests-file, "
        "probe.shortage.requests-file), in bytes.",
    )
    requests_file_max_requests: int = _limit(
        100_000, "Most requests (non-empty lines) in one probe requests file."
    )
    probe_max_arrivals: int = _limit(
        1_000_000,
        "Most requests one probe trial schedules (the sum of rate x duration over warm-up, "
        "steps, shortage and recovery); the schedule is built before the run, about 160 bytes "
        "a request.",
    )
    metrics_max_bytes: int = _limit(
        16 * MIB,
        "Largest answer of a server's Prometheus endpoint the probe reads (probe.metrics-url); "
        "a larger one is a failed read, and the server's queue unknown.",
    )
    probe_series_max_points: int = _limit(
        600,
        "Most points the probe keeps of each series over time (queue depth, server queue, "
        "slowest request): past it, neighbouring points merge, keeping the larger value.",
    )
    # Route.
    regions_max_verdicts: int = _limit(
        50_000,
        "Most verdicts route runs to place one image on Kubernetes nodes of one platform "
        "(--format k8s or arc): driver ranges x CUDA ranges x compute-capability groups x GPU "
        "brands, cut by the image's labels and each distinct NVIDIA_REQUIRE_* value. A stock "
        "nvidia/cuda image needs about 5,000 (under half a second); past the limit the image "
        "is refused, not placed.",
    )
    # Build matrix.
    matrix_max_cells: int = _limit(
        10_000,
        "Most build matrix cells, checked on the product of the axes before expanding.",
    )

    def override(self, **values: int) -> Limits:
        """A copy with some limits changed (tests and callers that tighten one bound)."""
        return dataclasses.replace(self, **values)

    @staticmethod
    def key(field_name: str) -> str:
        """The `gpuship.yaml` spelling of a limit, for messages: `limits.json-max-depth`."""
        return f"limits.{_kebab(field_name)}"


DEFAULT_LIMITS: Final = Limits()
