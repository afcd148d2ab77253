"""The image rule catalog: stable ids, names, categories, default severities and docs.

Ids are `GSI` + three digits; the first digit is the category group, as in the Dockerfile
catalog (0 metadata/security, 2 weights, 3 cache, 4 toolchain, 5 cuda, 7 waste, 8 size).
"""

from __future__ import annotations

from gpuship.report import Rule, Severity

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE

UNSAFE_ENTRY = "GSI001"
LABEL_MISSING = "GSI002"
LAYER_UNCHECKED = "GSI003"
WEIGHTS = "GSI201"
HUB_CACHE = "GSI202"
PACKAGE_CACHE = "GSI301"
TOOLCHAIN = "GSI401"
CUDA_CLAIM_WEAKER = "GSI501"
CUDA_DUPLICATED = "GSI502"
ARCH_MISSING = "GSI503"
ARCH_CLAIM_UNSUPPORTED = "GSI504"
CUDA_UNKNOWN = "GSI505"
DRIVER_LIBRARIES = "GSI506"
INEFFICIENT = "GSI701"
HIDDEN_FILES = "GSI702"
LAYER_OVERSIZED = "GSI801"
OVER_BUDGET = "GSI802"

RULES: tuple[Rule, ...] = (
    Rule(
        id=UNSAFE_ENTRY,
        name="layer-unsafe-entry",
        category="security",
        severity=E,
        summary="A layer holds a tar entry with an absolute or `..` path, or an unresolvable "
        "hard link.",
        rationale="Engines refuse or mis-extract such entries; tools that extract layers naively "
        "write outside their target directory. gpuship never extracts, and reports them.",
        fix="Rebuild the layer with a normal builder; never hand-craft layer tars with such paths.",
        bad_example="../../etc/cron.d/job  (tar entry name)",
        good_example="etc/cron.d/job",
        security_severity=7.0,
    ),
    Rule(
        id=LABEL_MISSING,
        name="image-label-missing",
        category="metadata",
        severity=W,
        summary="The image lacks a required label (default: "
        "org.opencontainers.image.source/revision).",
        rationale="Without source and revision nobody can tell which commit an image was built "
        "from; GitHub links packages to repositories through `org.opencontainers.image.source`.",
        fix="Add the labels at build time (docker/metadata-action or `gpuship build` do it).",
        bad_example="docker build -t app .",
        good_example="docker build --label org.opencontainers.image.revision=$GITHUB_SHA ...",
    ),
    Rule(
        id=LAYER_UNCHECKED,
        name="layer-unchecked",
        category="security",
        severity=E,
        summary="A layer passes one of gpuship's limits (decompressed size or ratio, entries), "
        "so it was not read to its end and nothing in it was checked.",
        rationale="A decompression bomb (20 GB of zeros is 20 MB of gzip) or millions of tiny "
        "files would take the runner's time and memory; stopping at a limit keeps the check "
        "bounded, and content that was never read can hide anything, so it fails closed.",
        fix="Shrink the layer; if it is genuine, raise the limit the message names under "
        "`limits:` in gpuship.yaml.",
        bad_example="a 20 MB gzip layer that decompresses to 20 GB of zeros",
        good_example="layers whose content gpuship can read within limits.layer-max-ratio",
        security_severity=5.0,
    ),
    Rule(
        id=WEIGHTS,
        name="weights-in-image",
        category="weights",
        severity=W,
        summary="Model weights are baked into the image.",
        rationale="Weights make every push and pull gigabytes larger, change more often than "
        "code, and invalidate layer caches; they belong in a model store or volume.",
        fix="Download weights at start-up (or mount them), or keep them in a dedicated last layer.",
        bad_example="COPY model.safetensors /models/",
        good_example="# fetch /models at start-up from the model registry",
    ),
    Rule(
        id=HUB_CACHE,
        name="model-hub-cache-in-image",
        category="weights",
        severity=W,
        summary="A Hugging Face or torch.hub download cache is in the image.",
        rationale="A cache left by `from_pretrained` or `torch.hub.load` during the build ships "
        "whole models by accident.",
        fix="Set HF_HOME/TORCH_HOME to a mounted path, or delete the cache in the same RUN.",
        bad_example="RUN python -c 'AutoModel.from_pretrained(\"bert-base-uncased\")'",
        good_example="RUN --mount=type=cache,target=/root/.cache/huggingface python warm.py",
    ),
    Rule(
        id=PACKAGE_CACHE,
        name="package-cache-in-image",
        category="cache",
        severity=W,
        summary="A package manager cache (pip, uv, conda pkgs, apt lists/archives, npm) was left.",
        rationale="Caches are never used at run time and are often hundreds of MB.",
        fix="pip --no-cache-dir, `conda clean -afy`, `rm -rf /var/lib/apt/lists/*` in the same "
        "RUN, or a BuildKit cache mount.",
        bad_example="RUN pip install torch",
        good_example="RUN --mount=type=cache,target=/root/.cache/pip pip install torch",
    ),
    Rule(
        id=TOOLCHAIN,
        name="toolchain-in-image",
        category="toolchain",
        severity=W,
        summary="Build tools (nvcc, gcc, static CUDA libraries, CUDA headers) are in the final "
        "image.",
        rationale="A `devel` base or a compiler kept for one build step adds gigabytes and "
        "attack surface to an image that only runs code.",
        fix="Build in a `devel` stage and copy the results into a `runtime` stage.",
        bad_example="FROM nvidia/cuda:12.4.1-devel-ubuntu22.04",
        good_example="FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nCOPY --from=build /out /app",
    ),
    Rule(
        id=CUDA_CLAIM_WEAKER,
        name="cuda-claim-weaker-than-content",
        category="cuda",
        severity=E,
        summary="NVIDIA_REQUIRE_CUDA, CUDA_VERSION or an io.gpuship label claims less CUDA than "
        "the image's content needs.",
        rationale="The driver check (nvidia-container-cli, gpuship verify) trusts the claim and "
        "passes a host whose driver is too old; the job then fails at run time.",
        fix="Set the claim to the effective CUDA (e.g. NVIDIA_REQUIRE_CUDA=cuda>=12.8), or use a "
        "torch wheel built for the base image's CUDA.",
        bad_example="FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install torch  # cu128",
        good_example="RUN pip install torch --index-url https://download.pytorch.org/whl/cu124",
    ),
    Rule(
        id=CUDA_DUPLICATED,
        name="cuda-libraries-twice",
        category="cuda",
        severity=W,
        summary="CUDA libraries exist both in the system toolkit and in pip `nvidia-*` wheels.",
        rationale="torch wheels load their own copies (RPATH into site-packages/nvidia), so the "
        "toolkit copies are dead weight, often gigabytes.",
        fix="Use a `base` CUDA image (or python slim) under pip CUDA wheels, or install torch "
        "without bundled CUDA against the system toolkit.",
        bad_example="FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04\nRUN pip install torch",
        good_example="FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nRUN pip install torch",
    ),
    Rule(
        id=ARCH_MISSING,
        name="gpu-arch-not-compiled",
        category="cuda",
        severity=E,
        summary="A GPU library has no kernel (SASS or PTX) for a configured target architecture.",
        rationale="On that GPU the library fails with 'no kernel image is available for "
        "execution on the device'; PTX-only targets start slowly (JIT) and need a new driver.",
        fix="Add `-gencode arch=compute_XX,code=sm_XX` (or TORCH_CUDA_ARCH_LIST) for the target.",
        bad_example="nvcc -gencode arch=compute_80,code=sm_80 ...   # targets: [sm_90]",
        good_example="nvcc -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90",
    ),
    Rule(
        id=ARCH_CLAIM_UNSUPPORTED,
        name="arch-label-not-backed",
        category="cuda",
        severity=E,
        summary="The io.gpuship.arch-list label names an architecture some GPU library cannot "
        "run on.",
        rationale="verify trusts the label and schedules the image on GPUs it cannot serve.",
        fix="Compile for the labelled architectures, or correct the label.",
        bad_example="LABEL io.gpuship.arch-list=8.0;9.0   # libs built for sm_80 only",
        good_example="LABEL io.gpuship.arch-list=8.0",
    ),
    Rule(
        id=CUDA_UNKNOWN,
        name="cuda-version-unknown",
        category="cuda",
        severity=N,
        summary="The image needs a CUDA release the knowledge base does not know.",
        rationale="Without the release's minimum driver no driver requirement can be derived.",
        fix="Update gpuship (its knowledge base), or check the CUDA version found.",
    ),
    Rule(
        id=DRIVER_LIBRARIES,
        name="driver-libraries-in-image",
        category="cuda",
        severity=E,
        summary="The image holds the NVIDIA driver's user-space libraries (libcuda.so.<driver "
        "version>, libnvidia-ml.so..., outside the CUDA forward-compatibility directory).",
        rationale="These libraries come from the host: the NVIDIA Container Toolkit injects the "
        "host driver's copies into each GPU container, because they must match the host's "
        "kernel module. Baked into the image (by `nvidia-utils-550`, `libnvidia-compute-550`, "
        "`libcuda1`, `cuda-drivers`, the `.run` installer, or a build under the NVIDIA runtime "
        "that kept what it mounted) they tie it to one driver: on a host with another, "
        "`libcuda.so.1` may resolve to the image's copy and CUDA fails with 'Failed to "
        "initialize NVML: Driver/library version mismatch' (CUDA error 803), or the toolkit "
        "cannot mount over them and the container does not start ('file exists'). Found by "
        "file name as the toolkit selects them: a library it injects (libcuda, libnvidia-ml, "
        "libnvidia-ptxjitcompiler, libGLX_nvidia...) whose name ends with a driver version.",
        fix="Remove what installs them (`gpuship lint` GSL512 names the Dockerfile line) and let "
        "the runtime inject the host's; link against `/usr/local/cuda/lib64/stubs/libcuda.so` "
        "at build time; install `cuda-compat-X-Y` only where forward compatibility is meant.",
        bad_example="/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15  (from libnvidia-compute-550)",
        good_example="/usr/local/cuda-12.4/compat/libcuda.so.550.54.15  (cuda-compat-12-4)\n"
        "/usr/local/cuda/lib64/stubs/libcuda.so  (link-time stub)",
        limits="Not reported: the link-time stubs (any `stubs/` directory), the forward-"
        "compatibility libraries of NVIDIA's cuda-compat package (`/usr/local/cuda*/compat/`, "
        "NGC's `compat/lib.real/`) and of conda-forge's (`$PREFIX/cuda-compat/`), empty files "
        "(what a build under the NVIDIA runtime leaves where the host's were mounted), symbolic "
        "links alone, and files whose name carries no driver version: Jetson's "
        "`tegra/libcuda.so.1.1`, a stub copied to `libcuda.so.1`. Only the final filesystem is "
        "judged: libraries a later layer deletes are waste (GSI702), not this.",
    ),
    Rule(
        id=INEFFICIENT,
        name="image-inefficient",
        category="waste",
        severity=W,
        summary="dive's efficiency or user-wasted-percent rule fails (with an absolute floor).",
        rationale="Files duplicated or deleted across layers are shipped and stored for nothing. "
        "Figures are dive's; the corrected waste does not count the copy that is kept.",
        fix="Delete files in the RUN that creates them; don't chmod/chown in a later layer.",
        bad_example="RUN apt-get update\nRUN rm -rf /var/lib/apt/lists/*",
        good_example="RUN apt-get update && apt-get install -y x && rm -rf /var/lib/apt/lists/*",
    ),
    Rule(
        id=HIDDEN_FILES,
        name="files-hidden-by-later-layer",
        category="waste",
        severity=W,
        summary="Files a layer added are deleted or overwritten by a later layer.",
        rationale="Deleting in a later layer does not shrink the image: the bytes stay in the "
        "earlier layer.",
        fix="Remove the files in the same RUN that created them, or use a multi-stage build.",
        bad_example="COPY data.tar /tmp/\nRUN tar -xf /tmp/data.tar && rm /tmp/data.tar",
        good_example="RUN --mount=type=bind,source=data.tar,target=/tmp/data.tar "
        "tar -xf /tmp/data.tar",
    ),
    Rule(
        id=LAYER_OVERSIZED,
        name="layer-oversized",
        category="size",
        severity=W,
        summary="A layer is larger than the configured threshold (default 1 GiB uncompressed).",
        rationale="Huge layers pull and extract slowly and are re-pushed whole on any change.",
        fix="Split large, rarely changing content into its own layers; move weights out.",
    ),
    Rule(
        id=OVER_BUDGET,
        name="image-over-size-budget",
        category="size",
        severity=E,
        summary="The image is larger than `inspect.size-budget-mib`.",
        rationale="A size budget catches regressions (a new dependency, a devel base) at review.",
        fix="Find the largest layers in the report and shrink them, or raise the budget knowingly.",
    ),
)
