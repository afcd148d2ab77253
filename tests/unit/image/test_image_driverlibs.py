"""Driver libraries among an image's visible files: regular files with bytes only."""

from __future__ import annotations

from gpuship.image.driverlibs import DriverLibraries, driver_libraries
from gpuship.image.overlay import VisibleFile
from gpuship.image.tarwalk import REGULAR, SYMLINK

LIB = "usr/lib/x86_64-linux-gnu"


def test_grouped_by_driver_version_and_layer() -> None:
    files = [
        VisibleFile(f"{LIB}/libnvidia-ml.so.550.54.15", REGULAR, 2 << 20, 3),
        VisibleFile(f"{LIB}/libcuda.so.550.54.15", REGULAR, 30 << 20, 3),
        VisibleFile(f"{LIB}/libcuda.so.535.161.08", REGULAR, 28 << 20, 1),
        VisibleFile(f"{LIB}/libcudart.so.12.4.127", REGULAR, 1 << 20, 1),
    ]
    assert driver_libraries(files) == [
        DriverLibraries("535.161.08", 1, (f"{LIB}/libcuda.so.535.161.08",)),
        DriverLibraries(
            "550.54.15", 3, (f"{LIB}/libcuda.so.550.54.15", f"{LIB}/libnvidia-ml.so.550.54.15")
        ),
    ]


def test_links_and_empty_files_hold_no_library() -> None:
    """A symbolic link alone (its target is judged where it is), and the empty files a build
    under the NVIDIA runtime leaves where the host's libraries were mounted."""
    files = [
        VisibleFile(f"{LIB}/libcuda.so.550.54.15", SYMLINK, 0, 1, link="libcuda.so.1"),
        VisibleFile(f"{LIB}/libnvidia-ml.so.550.54.15", REGULAR, 0, 1),
    ]
    assert driver_libraries(files) == []
