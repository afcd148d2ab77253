"""Image platforms (`os/arch[/variant]`) normalised as containerd's platforms package does,
and the platform of this host (or of an audited one) by its `uname` machine name.

Docker and containerd pick an index entry for the host they run on: `aarch64` is `arm64`,
`x86_64` is `amd64`, `arm64/v8` is plain `arm64`. gpuship picks and checks the same way, so
an arm64 GPU runner (GH200, Grace) is judged against the image it would really run.
`PlatformMissing` is the one error for an index without the platform asked for: the image
stage raises it, verify and route decide what it means for a host.
"""

from __future__ import annotations

import os

from gpuship.errors import InputError

# containerd platforms.normalizeArch: (arch, variant) spellings -> the canonical pair.
_ARCHES = {"i386": "386", "x86_64": "amd64", "x86-64": "amd64", "aarch64": "arm64"}
_ARM64_VARIANTS = {"8": "", "v8": "", "v8.0": "", "9": "v9", "9.0": "v9", "v9.0": "v9"}


def normalize(platform: str) -> str:
    """`Linux/aarch64` -> `linux/arm64`, `linux/arm64/v8` -> `linux/arm64`, `linux/arm` ->
    `linux/arm/v7`; a platform without an OS part is returned as given."""
    parts = platform.lower().split("/")
    if len(parts) < 2:
        return platform
    system = "darwin" if parts[0] == "macos" else parts[0]
    arch, variant = _normalize_arch(parts[1], parts[2] if len(parts) > 2 else "")
    return "/".join(p for p in (system, arch, variant) if p)


def _normalize_arch(arch: str, variant: str) -> tuple[str, str]:
    arch = _ARCHES.get(arch, arch)
    if arch == "386":
        return arch, ""
    if arch == "amd64":
        return arch, "" if variant == "v1" else variant
    if arch == "arm64":
        return arch, _ARM64_VARIANTS.get(variant, variant)
    if arch == "armhf":
        return "arm", "v7"
    if arch == "armel":
        return "arm", "v6"
    if arch == "arm":
        return arch, {"": "v7", "7": "v7", "5": "v5", "6": "v6", "8": "v8"}.get(variant, variant)
    return arch, variant


def host_platform(machine: str | None = None) -> str:
    """The Linux platform a host runs images of: its `uname -m` (this host's when None).

    The OS part is always linux: GPU images are Linux images, also under Docker Desktop.
    """
    return normalize(f"linux/{machine or os.uname().machine}")


def architecture(platform: str) -> str:
    """`linux/arm64/v8` -> `arm64`."""
    parts = normalize(platform).split("/")
    return parts[1] if len(parts) > 1 else parts[0]


def matches(image: str, wanted: str) -> bool:
    """Whether an index entry for `image` serves `wanted`. A variant counts only when
    `wanted` names one (`linux/amd64` takes `linux/amd64/v3`, as gpuship always did)."""
    have, want = normalize(image).split("/"), normalize(wanted).split("/")
    if have[:2] != want[:2]:
        return False
    explicit = len(wanted.split("/")) > 2
    return not explicit or have[2:] == want[2:]


class PlatformMissing(InputError):
    """An index without an entry for the platform asked for; `available` lists its entries."""

    def __init__(self, where: str, wanted: str, available: tuple[str, ...]) -> None:
        listed = ", ".join(available) or "none"
        super().__init__(f"{where} has no image for platform {wanted} (available: {listed})")
        self.wanted = wanted
        self.available = available
