"""Real environment values of `nvidia/cuda` base images, as the reference records them.

Source: shared/reference/cuda-compat.md §2.6 (copies of
gitlab.com/nvidia/container-images/cuda `dist/<ver>/<os>/base/Dockerfile`) and §3.2 for
CUDA_VERSION / NV_CUDA_COMPAT_PACKAGE. The compat terms are generated from the branch and
brand lists given there, in the images' order (brands inside each branch).
"""

from __future__ import annotations

BRANDS_11_8 = (
    "tesla",
    "unknown",
    "nvidia",
    "nvidiartx",
    "geforce",
    "geforcertx",
    "quadro",
    "quadrortx",
    "titan",
    "titanrtx",
)
# 12.4.1 lists the same ten brands as 11.8 (incl. GeForce and TITAN).
BRANDS_12_4 = BRANDS_11_8
# From 12.6 on: no geforce/titan, and the vGPU brands appear.
BRANDS_12_6 = (
    "unknown",
    "grid",
    "tesla",
    "nvidia",
    "quadro",
    "quadrortx",
    "nvidiartx",
    "vapps",
    "vpc",
    "vcs",
    "vws",
    "cloudgaming",
)


def require_cuda(cuda: str, branches: tuple[int, ...], brands: tuple[str, ...]) -> str:
    """`cuda>=X.Y brand=B,driver>=N,driver<N+1 ...` as NVIDIA writes it."""
    terms = [
        f"brand={brand},driver>={branch},driver<{branch + 1}"
        for branch in branches
        for brand in brands
    ]
    return " ".join([f"cuda>={cuda}", *terms])


def base_image_env(cuda_version: str, require: str) -> dict[str, str]:
    """The GPU-relevant env of an nvidia/cuda base image."""
    major, minor = cuda_version.split(".")[:2]
    return {
        "NVIDIA_REQUIRE_CUDA": require,
        "CUDA_VERSION": cuda_version,
        "NV_CUDA_COMPAT_PACKAGE": f"cuda-compat-{major}-{minor}",
        "NVIDIA_VISIBLE_DEVICES": "all",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
    }


IMAGES: dict[str, dict[str, str]] = {
    "11.8": base_image_env("11.8.0", require_cuda("11.8", (470,), BRANDS_11_8)),
    "12.4.1": base_image_env("12.4.1", require_cuda("12.4", (470, 525, 535), BRANDS_12_4)),
    "12.6.3": base_image_env("12.6.3", require_cuda("12.6", (470, 535, 550), BRANDS_12_6)),
    "12.8": base_image_env("12.8.1", require_cuda("12.8", (470, 535, 550, 560, 565), BRANDS_12_6)),
    "13.0": base_image_env("13.0.3", require_cuda("13.0", (535, 550, 565, 570, 575), BRANDS_12_6)),
}
