"""Issue #37: CUDA facts real ML Dockerfiles reach through indirection, CUDA-bound packages
other than torch, and shell branches on build args. Each case is shaped like a pattern seen in
public GPU Dockerfiles, written here from scratch: what must be found (at its line and column)
and what must stay silent, including what gpuship does not know."""

from __future__ import annotations

import pytest

from conftest import Linter, assert_found_at
from gpuship.cuda.knowledge import knowledge_base
from gpuship.lint.rules import RULES

CUDA_124 = "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
CUDA_118 = "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\n"
APT_PYTHON = (
    "RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pip "
    "&& rm -rf /var/lib/apt/lists/*\n"
)
INSTALL_TORCH_SH = (
    "#!/usr/bin/env bash\nset -euo pipefail\n"
    "pip install --no-cache-dir torch==2.6.0 --index-url https://download.pytorch.org/whl/cu121\n"
)

# (id, rule, Dockerfile, context files, expected (line, column) of each finding of the rule)
CASES = [
    # --- torch reached through indirection ---
    (
        "conda-run-exec-form-runs-a-script",
        "GSL501",
        "FROM continuumio/miniconda3:24.7.1-0\nCOPY install_torch.sh /opt/\n"
        'RUN ["conda", "run", "-n", "base", "bash", "/opt/install_torch.sh"]\n',
        {"install_torch.sh": INSTALL_TORCH_SH},
        [(3, 28)],
    ),
    (
        "conda-run-exec-form-runs-pip",
        "GSL501",
        "FROM continuumio/miniconda3:24.7.1-0\n"
        'RUN ["conda", "run", "--no-capture-output", "-n", "base", "pip", "install", '
        '"torch==2.6.0", "--index-url", "https://download.pytorch.org/whl/cu121"]\n',
        {},
        [(2, 78)],
    ),
    (
        "versions-read-from-a-sourced-env-file",
        "GSL501",
        CUDA_124 + "COPY versions.env /opt/\n" + APT_PYTHON + "RUN . /opt/versions.env && "
        "pip install --no-cache-dir torch==${TORCH_VERSION} "
        "--index-url https://download.pytorch.org/whl/${TORCH_CUDA}\n",
        {"versions.env": "# pinned stack\nTORCH_VERSION=2.6.0\nTORCH_CUDA=cu121\n"},
        [(4, 55)],
    ),
    (
        "torch-in-a-conda-environment-file-pip-section",
        "GSL501",
        "FROM continuumio/miniconda3:24.7.1-0\nCOPY environment.yml /tmp/\n"
        "RUN conda env create -f /tmp/environment.yml && conda clean -afy\n",
        {
            "environment.yml": "name: train\nchannels:\n  - conda-forge\ndependencies:\n"
            "  - python=3.11\n  - pip\n  - pip:\n"
            "    - --index-url https://download.pytorch.org/whl/cu121\n    - torch==2.6.0\n"
        },
        [(9, 7)],
    ),
    # A `+cuXYZ` local version computed from the CUDA build arg: 2.6 has no cu121 build.
    # A value the build computes from its own files is unknown, never guessed (line 5).
    (
        "local-version-computed-with-tr",
        "GSL501",
        CUDA_124 + APT_PYTHON + "ARG CUDA=12.1.1\n"
        "RUN CU=$(echo ${CUDA%.*} | tr -d .) && pip install --no-cache-dir "
        "torch==2.6.0+cu${CU} --extra-index-url https://download.pytorch.org/whl/cu${CU}\n"
        "RUN pip install --no-cache-dir "
        "torch==2.6.0+cu$(cat /usr/local/cuda/version.txt | cut -d. -f1,2 | tr -d .)\n",
        {},
        [(4, 67)],
    ),
    (
        "local-version-computed-in-python",
        "GSL501",
        CUDA_124 + APT_PYTHON + "ARG CUDA=12.1\n"
        "RUN TAG=$(python3 -c \"print('cu' + '${CUDA}'.replace('.', ''))\") && "
        "pip install --no-cache-dir torch==2.6.0+${TAG} "
        "--extra-index-url https://download.pytorch.org/whl/${TAG}\n",
        {},
        [(4, 96)],
    ),
    (
        "local-version-from-bash-substitution",
        "GSL501",
        CUDA_124 + APT_PYTHON + "ARG CUDA_VER=12.1\n"
        "RUN pip install --no-cache-dir torch==2.6.0+cu${CUDA_VER//./} "
        "--extra-index-url https://download.pytorch.org/whl/cu${CUDA_VER//./}\n",
        {},
        [(4, 32)],
    ),
    # An extra index assembled in the shell for CUDA 12.1, and a torch range: pip takes PyPI's
    # newest torch, whose CUDA is another.
    (
        "index-assembled-in-shell-with-a-torch-range",
        "GSL510",
        CUDA_124 + APT_PYTHON + "ARG CUDA_VERSION_SHORT=12.1\n"
        'RUN INDEX="https://download.pytorch.org/whl/cu$(echo $CUDA_VERSION_SHORT | tr -d .)" '
        '&& pip install --no-cache-dir "torch>=2.3" --extra-index-url "$INDEX"\n',
        {},
        [(4, 116)],
    ),
    (
        "extra-index-of-a-retired-variant-with-a-range",
        "GSL510",
        CUDA_124 + APT_PYTHON + 'RUN pip install --no-cache-dir "torch>=2.2,<3" '
        "--extra-index-url https://download.pytorch.org/whl/cu121\n",
        {},
        [(3, 32)],
    ),
    # --- shell branches on build args ---
    (
        "clone-only-when-a-build-arg-is-set",
        "GSL106",
        CUDA_124 + APT_PYTHON + "ARG BUILD_FLASH_ATTN=0\n"
        'RUN if [ "$BUILD_FLASH_ATTN" = "1" ]; then \\\n'
        "      git clone https://github.com/Dao-AILab/flash-attention.git /opt/fa && "
        "cd /opt/fa && MAX_JOBS=4 python3 setup.py install; \\\n"
        "    fi\n",
        {},
        [],
    ),
    (
        "only-the-default-case-arm-is-judged",
        "GSL501",
        CUDA_124 + APT_PYTHON + "ARG TORCH_CUDA=cu124\n"
        'RUN case "$TORCH_CUDA" in \\\n'
        "      cu121) pip install --no-cache-dir torch==2.6.0 "
        "--index-url https://download.pytorch.org/whl/cu121 ;; \\\n"
        "      cu124) pip install --no-cache-dir torch==2.6.0 "
        "--index-url https://download.pytorch.org/whl/cu124 ;; \\\n"
        "      *) echo unsupported && exit 1 ;; \\\n"
        "    esac\n",
        {},
        [],
    ),
    (
        "the-arm-that-runs-is-judged",
        "GSL501",
        CUDA_124 + APT_PYTHON + "ARG LEGACY=true\n"
        'RUN if [ "${LEGACY}" = "true" ]; then \\\n'
        "      pip install --no-cache-dir torch==2.6.0 "
        "--index-url https://download.pytorch.org/whl/cu121; \\\n"
        "    else \\\n"
        "      pip install --no-cache-dir torch==2.6.0 "
        "--index-url https://download.pytorch.org/whl/cu128; \\\n"
        "    fi\n",
        {},
        [(5, 34)],
    ),
    (
        "a-script-run-in-a-branch-not-taken",
        "GSL501",
        CUDA_124 + "COPY install_torch.sh /opt/\nARG WITH_TORCH=no\n"
        'RUN if [ "$WITH_TORCH" = "yes" ]; then bash /opt/install_torch.sh; fi\n',
        {"install_torch.sh": INSTALL_TORCH_SH},
        [],
    ),
    # --- CUDA-bound packages other than torch, against the base image's CUDA ---
    (
        "cupy-for-cuda-11-on-a-cuda-12-base",
        "GSL509",
        CUDA_124 + APT_PYTHON + "RUN pip install --no-cache-dir cupy-cuda11x==13.3.0\n",
        {},
        [(3, 32)],
    ),
    # Only PyPI's onnxruntime-gpu 1.17 is known to be a CUDA 11 build: 1.20 is CUDA 12, one
    # from ONNX Runtime's CUDA 12 feed or a release gpuship does not hold is unknown.
    (
        "onnxruntime-gpu-for-cuda-11-on-a-cuda-12-base",
        "GSL509",
        CUDA_124 + APT_PYTHON + "RUN pip install --no-cache-dir onnxruntime-gpu==1.17.1\n"
        "RUN pip install --no-cache-dir onnxruntime-gpu==1.20.1\n"
        "RUN pip install --no-cache-dir onnxruntime-gpu==1.17.1 "
        "--extra-index-url https://pkgs.dev.azure.com/onnxruntime/onnxruntime/_packaging/"
        "onnxruntime-cuda-12/pypi/simple/\n"
        "RUN pip install --no-cache-dir onnxruntime-gpu==1.23.2\n",
        {},
        [(3, 32)],
    ),
    (
        "tensorflow-and-cuda-on-a-cuda-11-base",
        "GSL509",
        CUDA_118 + APT_PYTHON + 'RUN pip install --no-cache-dir "tensorflow[and-cuda]==2.16.1"\n',
        {},
        [(3, 32)],
    ),
    (
        "jax-cuda12-on-a-cuda-11-base",
        "GSL509",
        CUDA_118 + APT_PYTHON + 'RUN pip install --no-cache-dir -U "jax[cuda12]==0.4.35"\n',
        {},
        [(3, 35)],
    ),
    (
        "paddle-post-build-for-cuda-11",
        "GSL509",
        CUDA_124 + APT_PYTHON + "RUN python3 -m pip install --no-cache-dir "
        "paddlepaddle-gpu==2.6.1.post117 "
        "-f https://www.paddlepaddle.org.cn/whl/linux/mkl/avx/stable.html\n",
        {},
        [(3, 43)],
    ),
    (
        "nvidia-wheels-of-another-cuda",
        "GSL509",
        CUDA_124 + APT_PYTHON + "RUN pip install --no-cache-dir "
        "nvidia-cublas-cu11==11.11.3.6 nvidia-cublas-cu12==12.4.5.8\n",
        {},
        [(3, 32)],
    ),
    (
        "tensorrt-for-cuda-12-on-a-cuda-11-base",
        "GSL509",
        CUDA_118 + APT_PYTHON + "RUN pip install --no-cache-dir tensorrt-cu12==10.3.0\n"
        # A bare tensorrt or cupy states no CUDA: unknown.
        "RUN pip install --no-cache-dir tensorrt==10.3.0 cupy==13.3.0\n",
        {},
        [(3, 32)],
    ),
    # --- cuDNN of another major than torch's, in any package manager ---
    (
        "onnxruntime-gpu-needs-cudnn-8-beside-torch-cudnn-9",
        "GSL509",
        "FROM python:3.11-slim\n"
        "RUN pip install --no-cache-dir torch==2.5.1 onnxruntime-gpu==1.18.1\n",
        {},
        [(2, 45)],
    ),
    # The cuDNN 8 that onnxruntime-gpu 1.18 loads is no dead layer.
    (
        "cudnn-8-a-package-needs-is-no-waste",
        "GSL509",
        CUDA_118 + "RUN apt-get update && apt-get install -y --no-install-recommends "
        "python3-pip libcudnn8=8.9.7.29-1+cuda11.8 && rm -rf /var/lib/apt/lists/*\n"
        "RUN pip install --no-cache-dir torch==2.5.1 onnxruntime-gpu==1.18.1\n",
        {},
        [],
    ),
    (
        "conda-cudnn-8-beside-torch-cudnn-9",
        "GSL509",
        "FROM continuumio/miniconda3:24.7.1-0\n"
        "RUN pip install --no-cache-dir torch==2.5.1 && conda install -y -c conda-forge "
        "cudnn=8.9.7 && conda clean -afy\n",
        {},
        [(2, 80)],
    ),
    (
        "pip-cudnn-8-beside-torch-cudnn-9",
        "GSL509",
        "FROM python:3.11-slim\nRUN pip install --no-cache-dir torch==2.5.1\n"
        "RUN pip install --no-cache-dir nvidia-cudnn-cu11==8.9.6.50\n",
        {},
        [(3, 32)],
    ),
    (
        "tensorflow-and-cuda-brings-cudnn-8-beside-torch",
        "GSL509",
        "FROM python:3.11-slim\nRUN pip install --no-cache-dir torch==2.5.1\n"
        'RUN pip install --no-cache-dir "tensorflow[and-cuda]==2.16.1"\n',
        {},
        [(3, 32)],
    ),
    # --- companion wheels built for another torch or Python ---
    # One file, a target per stack: only the xformers built for another torch is reported;
    # a release gpuship does not record is unknown.
    (
        "xformers-pinned-for-another-torch",
        "GSL511",
        CUDA_124.replace("\n", " AS base\n") + APT_PYTHON + "FROM base AS current\n"
        "RUN pip install --no-cache-dir torch==2.5.1 xformers==0.0.28.post3 "
        "--index-url https://download.pytorch.org/whl/cu124\n"
        "FROM base AS stale\n"
        "RUN pip install --no-cache-dir torch==2.5.1 xformers==0.0.28.post1 "
        "--index-url https://download.pytorch.org/whl/cu124\n"
        "FROM base AS unrecorded\n"
        "RUN pip install --no-cache-dir torch==2.5.1 xformers==0.0.26\n",
        {},
        [(6, 45)],
    ),
    (
        "wheel-for-a-torch-the-range-excludes",
        "GSL511",
        CUDA_124.replace("\n", " AS base\n") + APT_PYTHON + "FROM base AS admits\n"
        'RUN pip install --no-cache-dir "torch>=2.4,<2.5" '
        "https://github.com/Dao-AILab/flash-attention/releases/download/v2.6.3/"
        "flash_attn-2.6.3+cu123torch2.4cxx11abiFALSE-cp310-cp310-linux_x86_64.whl\n"
        "FROM base AS excludes\n"
        'RUN pip install --no-cache-dir "torch>=2.5" '
        "https://github.com/Dao-AILab/flash-attention/releases/download/v2.6.3/"
        "flash_attn-2.6.3+cu123torch2.4cxx11abiFALSE-cp310-cp310-linux_x86_64.whl\n",
        {},
        [(6, 45)],
    ),
    # Ubuntu 22.04's python3 is 3.10: a cp311 wheel is refused, a cp310 one is not, and with
    # another interpreter installed the image's Python is unknown.
    (
        "wheel-for-another-python-than-ubuntu-python3",
        "GSL511",
        CUDA_124.replace("\n", " AS base\n") + APT_PYTHON + "FROM base AS py311\n"
        "RUN pip install --no-cache-dir "
        "https://github.com/flashinfer-ai/flashinfer/releases/download/v0.1.6/"
        "flashinfer-0.1.6+cu124torch2.4-cp311-cp311-linux_x86_64.whl\n"
        "FROM base AS py310\n"
        "RUN pip install --no-cache-dir "
        "https://github.com/flashinfer-ai/flashinfer/releases/download/v0.1.6/"
        "flashinfer-0.1.6+cu124torch2.4-cp310-cp310-linux_x86_64.whl\n"
        "FROM base AS deadsnakes\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends python3.11 "
        "&& rm -rf /var/lib/apt/lists/*\n"
        "RUN pip install --no-cache-dir "
        "https://github.com/flashinfer-ai/flashinfer/releases/download/v0.1.6/"
        "flashinfer-0.1.6+cu124torch2.4-cp311-cp311-linux_x86_64.whl\n",
        {},
        [(4, 32)],
    ),
]


@pytest.mark.parametrize(
    ("rule", "dockerfile", "files", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_real_world_cuda_pattern(
    lint: Linter,
    rule: str,
    dockerfile: str,
    files: dict[str, str | bytes | int],
    expected: list[tuple[int, int]],
) -> None:
    assert_found_at(lint, rule, dockerfile, files, expected)


BRANCHY = (
    CUDA_124 + APT_PYTHON + "ARG BUILD_FLASH_ATTN=0\n"
    'RUN if [ "$BUILD_FLASH_ATTN" = "1" ]; then '
    "git clone https://github.com/Dao-AILab/flash-attention.git /opt/fa; fi\n"
    "RUN if [ -f /opt/requirements.lock ]; then pip install --no-cache-dir torch==2.6.0 "
    "--index-url https://download.pytorch.org/whl/cu121; fi\n"
)


def test_a_finding_in_a_branch_a_build_arg_selects_says_so(lint: Linter) -> None:
    findings = lint(BRANCHY, build_args={"BUILD_FLASH_ATTN": "1"})
    (clone,) = [f for f in findings if f.rule == "GSL106"]
    assert clone.message.endswith(
        '(in the shell branch `if [ "$BUILD_FLASH_ATTN" = "1" ]`, taken with '
        "--build-arg BUILD_FLASH_ATTN=1)"
    )


def test_a_finding_in_a_branch_gpuship_cannot_decide_says_so(lint: Linter) -> None:
    (torch,) = [f for f in lint(BRANCHY) if f.rule == "GSL501"]
    assert torch.severity.value == "error"
    assert torch.message.endswith(
        "(in the shell branch `if [ -f /opt/requirements.lock ]`, which gpuship cannot decide "
        "from the Dockerfile, so it is checked as if it runs)"
    )


def test_the_package_messages_say_how_gpuship_knows(lint: Linter) -> None:
    findings = lint(
        CUDA_124 + APT_PYTHON + "RUN pip install --no-cache-dir onnxruntime-gpu==1.17.1 "
        'cupy-cuda11x==13.3.0 "jax[cuda11_pip]==0.4.20"\n'
    )
    messages = [f.message for f in findings if f.rule == "GSL509"]
    assert len(messages) == 3, messages
    assert (
        "onnxruntime-gpu==1.17.1 is built for CUDA 11.8 (as gpuship's knowledge base says)"
        in (messages[0])
    )
    assert "cupy-cuda11x==13.3.0 is built for CUDA 11 (as its name says)" in messages[1]
    assert "installs CUDA 11 libraries from pip (as its extra says)" in messages[2]


def test_rule_docs_name_only_what_the_knowledge_base_holds() -> None:
    """The releases GSL510 and GSL511 name in their docs are the knowledge base's."""
    kb = knowledge_base()
    docs = {rule.id: rule.limits for rule in RULES}
    for row in kb.torch.retired_variants[:3]:
        assert f"{row.name} after {row.last_release}" in docs["GSL510"]
    xformers = [r.version for r in kb.torch_builds if r.package == "xformers"]
    assert f"({xformers[0]} to {xformers[-1]})" in docs["GSL511"]
    pythons = " and ".join(r.python for r in kb.os_pythons)
    assert f"; {pythons})" in docs["GSL511"]
