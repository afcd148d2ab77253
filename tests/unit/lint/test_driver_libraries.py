"""GSL512: driver libraries installed into the image, on Dockerfiles shaped like the ones that
do it (issue #33): the apt packages of a GPU host's setup script copied into a Dockerfile,
Debian's and RHEL's names, NVIDIA's `.run` installer; and the look-alikes that stay silent."""

from __future__ import annotations

from conftest import Linter, positions

RULE = "GSL512"


def _found(
    lint: Linter, dockerfile: str, files: dict[str, str | bytes | int] | None = None
) -> list[tuple[int, int, str]]:
    """(line, column, message) of each GSL512 finding."""
    return [
        (f.location.line or 0, f.location.column or 0, f.message)
        for f in lint(dockerfile, files)
        if f.rule == RULE and f.location is not None
    ]


def test_the_issue_dockerfile_is_an_error_on_each_package(lint: Linter) -> None:
    findings = lint(
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends \\\n"
        "      nvidia-driver-550 libnvidia-compute-550 \\\n"
        " && rm -rf /var/lib/apt/lists/*\n"
    )
    assert positions(findings, RULE) == [(3, 7), (3, 25)]
    first = next(f for f in findings if f.rule == RULE)
    assert first.severity.value == "error"
    assert first.message.startswith(
        "nvidia-driver-550 installs the NVIDIA driver's user-space libraries (libcuda.so, "
        "libnvidia-ml.so, libnvidia-ptxjitcompiler.so)"
    )
    assert "'Driver/library version mismatch' (CUDA error 803)" in first.message


def test_nvidia_smi_for_a_healthcheck_beside_the_toolkit_packages(lint: Linter) -> None:
    """A real pattern: nvcc and the runtime from NVIDIA's repository, plus nvidia-utils for
    nvidia-smi (sagarsrc/quantization setup.sh)."""
    found = _found(
        lint,
        "FROM ubuntu:22.04\n"
        "RUN wget -q https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/"
        "x86_64/cuda-keyring_1.1-1_all.deb && dpkg -i cuda-keyring_1.1-1_all.deb \\\n"
        " && apt-get update && apt-get install -y --no-install-recommends \\\n"
        "      cuda-nvcc-12-4 cuda-cudart-dev-12-4 nvidia-utils-535 \\\n"
        " && rm -rf /var/lib/apt/lists/*\n"
        "HEALTHCHECK CMD nvidia-smi || exit 1\n",
    )
    assert [(line, column) for line, column, _ in found] == [(4, 43)]
    assert found[0][2].startswith("nvidia-utils-535 installs the NVIDIA driver's user-space "
                                  "libraries (nvidia-smi, libcuda.so")  # fmt: skip


def test_a_branch_from_a_build_arg_and_a_pinned_version(lint: Linter) -> None:
    found = _found(
        lint,
        "FROM ubuntu:22.04\nARG DRIVER_BRANCH\n"
        "RUN apt-get update && apt-get install -y \\\n"
        "      libnvidia-compute-${DRIVER_BRANCH} libnvidia-gl-550=550.54.15-0ubuntu1\n",
    )
    assert [(line, column) for line, column, _ in found] == [(4, 7), (4, 42)]
    assert "(libGLX_nvidia.so, libnvidia-glcore.so" in found[1][2]


def test_debian_and_rhel_names(lint: Linter) -> None:
    debian = _found(
        lint,
        "FROM debian:bookworm-slim\n"
        "RUN sed -i 's/main/main contrib non-free/' /etc/apt/sources.list.d/debian.sources \\\n"
        " && apt-get update && apt-get install -y --no-install-recommends libcuda1 nvidia-smi\n",
    )
    assert [(line, column) for line, column, _ in debian] == [(3, 66), (3, 75)]
    rhel = _found(
        lint,
        "FROM rockylinux:9\n"
        "RUN dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/"
        "repos/rhel9/x86_64/cuda-rhel9.repo \\\n"
        " && dnf -y module install nvidia-driver:latest-dkms \\\n"
        " && dnf -y install nvidia-driver-cuda-libs-550.54.15 nvidia-driver-NVML cuda-drivers \\\n"
        " && dnf clean all\n",
    )
    assert [(line, column) for line, column, _ in rhel] == [(3, 27), (4, 20), (4, 54), (4, 73)]


def test_the_driver_installer_also_without_kernel_module(lint: Linter) -> None:
    found = _found(
        lint,
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nARG DRIVER_VERSION=550.54.15\n"
        "RUN curl -fsSLO https://us.download.nvidia.com/XFree86/Linux-x86_64/${DRIVER_VERSION}/"
        "NVIDIA-Linux-x86_64-${DRIVER_VERSION}.run \\\n"
        " && chmod +x NVIDIA-Linux-x86_64-${DRIVER_VERSION}.run \\\n"
        " && ./NVIDIA-Linux-x86_64-${DRIVER_VERSION}.run --silent --no-kernel-module \\\n"
        " && rm NVIDIA-Linux-x86_64-${DRIVER_VERSION}.run\n"
        "RUN sh /tmp/NVIDIA-Linux-aarch64-550.54.15.run -s --no-kernel-module\n",
    )
    assert [(line, column) for line, column, _ in found] == [(5, 5), (7, 8)]
    assert found[0][2].startswith(
        "NVIDIA-Linux-x86_64-550.54.15.run (NVIDIA's driver installer) installs the NVIDIA "
        "driver's user-space libraries"
    )


def test_the_cuda_runfile_only_with_driver(lint: Linter) -> None:
    found = _found(
        lint,
        "FROM ubuntu:22.04\n"
        "RUN sh cuda_12.4.0_550.54.14_linux.run --silent --toolkit --override\n"
        "RUN sh cuda_12.4.0_550.54.14_linux.run --silent --driver --toolkit\n",
    )
    assert [(line, column) for line, column, _ in found] == [(3, 8)]


def test_a_script_the_run_runs(lint: Linter) -> None:
    found = _found(
        lint,
        "FROM ubuntu:22.04\nCOPY setup-gpu.sh /tmp/\nRUN bash /tmp/setup-gpu.sh\n",
        {"setup-gpu.sh": "set -e\napt-get update\napt-get install -y nvidia-headless-550\n"},
    )
    assert [(line, column) for line, column, _ in found] == [(3, 20)]


def test_an_onbuild_trigger_installs_into_every_child_image(lint: Linter) -> None:
    findings = lint("FROM ubuntu:22.04\nONBUILD RUN apt-get install -y libnvidia-compute-535\n")
    assert positions(findings, RULE) == [(2, 32)]


def test_look_alikes_are_silent(lint: Linter) -> None:
    """The toolkit that injects the driver, nvcc, forward compatibility, CUDA wheels, the
    installer only unpacked: none is a driver library in the image."""
    findings = lint(
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends \\\n"
        "      nvidia-container-toolkit libnvidia-container-tools libnvidia-container1 \\\n"
        "      cuda-compat-12-4 nvidia-cuda-toolkit cuda-toolkit-12-4 \\\n"
        " && rm -rf /var/lib/apt/lists/*\n"
        "RUN pip install --no-cache-dir nvidia-ml-py==12.560.30 \\\n"
        "      nvidia-cuda-runtime-cu12==12.4.127\n"
        "RUN conda install -y -c conda-forge cuda-compat=12.4\n"
        "RUN sh NVIDIA-Linux-x86_64-550.54.15.run -x --target /opt/driver\n"
    )
    assert positions(findings, RULE) == []


def test_driver_only_in_a_builder_stage_or_purged_again(lint: Linter) -> None:
    findings = lint(
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build\n"
        "RUN apt-get update && apt-get install -y libnvidia-compute-550\n"
        "RUN make -C /src\n"
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "COPY --from=build /src/out /opt/app\n"
        "RUN apt-get update && apt-get install -y nvidia-utils-550 && nvidia-smi -h \\\n"
        " && apt-get purge -y nvidia-utils-550\n"
        "RUN apt-get install -y libnvidia-gl-550\n"
        "RUN apt-get purge -y 'libnvidia-*' && apt-get autoremove -y\n"
    )
    assert positions(findings, RULE) == []
    rhel = lint(
        "FROM rockylinux:9\n"
        "RUN dnf -y install nvidia-driver-cuda-libs && ldconfig -p | grep libcuda \\\n"
        " && dnf -y remove nvidia-driver-cuda-libs && dnf clean all\n"
    )
    assert positions(rhel, RULE) == []


def test_a_reason_silences_it(lint: Linter) -> None:
    findings = lint(
        "FROM ubuntu:22.04\n"
        "# gpuship ignore=GSL512 -- a node image for one fixed driver fleet\n"
        "RUN apt-get install -y libnvidia-compute-550\n"
    )
    assert positions(findings, RULE) == []


def test_what_the_rule_says_it_does_not_judge_is_silent(lint: Linter) -> None:
    """zypper, packages installed by path, NVIDIA's `cuda-X-Y` metapackage and a script
    downloaded at build time are not read (the rule's limits say so; inspect sees the files)."""
    findings = lint(
        "FROM ubuntu:22.04\n"
        "RUN zypper --non-interactive install nvidia-compute-G06\n"
        "RUN apt-get install -y ./libnvidia-compute-550_550.54.15-0ubuntu1_amd64.deb cuda-12-4\n"
        "RUN curl -fsSL https://ollama.com/install.sh | sh\n"
    )
    assert positions(findings, RULE) == []
