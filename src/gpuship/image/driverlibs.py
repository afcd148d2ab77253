"""GSI506: the NVIDIA driver's user-space libraries in the built image, outside the CUDA
forward-compatibility directory. Which files those are is `gpuship.cuda.driverlibs` (the
names the NVIDIA Container Toolkit injects, carrying the driver's version); the link-time stubs
and the `cuda-compat` libraries are not them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from gpuship.cuda.driverlibs import driver_library
from gpuship.image.overlay import VisibleFile
from gpuship.image.tarwalk import REGULAR

_LISTED = 3


@dataclass(frozen=True)
class DriverLibraries:
    """The driver libraries of one driver version that one layer put in the image."""

    version: str
    layer: int
    paths: tuple[str, ...]  # relative to the image root, sorted

    @property
    def message(self) -> str:
        shown = ", ".join(f"/{path}" for path in self.paths[:_LISTED])
        more = f" and {len(self.paths) - _LISTED} more" if len(self.paths) > _LISTED else ""
        return (
            f"NVIDIA driver {self.version} user-space libraries in layer {self.layer}: "
            f"{shown}{more}. They belong to the host, whose driver's copies the NVIDIA "
            "Container Toolkit injects at run time; baked in, they meet a host with another "
            "driver as 'Driver/library version mismatch' (CUDA error 803) or a container that "
            "does not start"
        )


def driver_libraries(files: Iterable[VisibleFile]) -> list[DriverLibraries]:
    """The driver libraries among the image's visible files, by driver version and layer. A
    file of no bytes is not a library: it is what a build under the NVIDIA runtime leaves where
    the toolkit had mounted the host's (NVIDIA/libnvidia-container#140)."""
    found: dict[tuple[str, int], list[str]] = defaultdict(list)
    for item in files:
        if item.kind != REGULAR or item.size == 0:
            continue
        library = driver_library(item.path)
        if library is not None:
            found[(library.version, item.layer)].append(item.path)
    return [
        DriverLibraries(version, layer, tuple(sorted(paths)))
        for (version, layer), paths in sorted(found.items(), key=lambda pair: pair[0][::-1])
    ]
