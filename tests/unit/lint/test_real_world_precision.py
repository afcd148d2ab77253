"""Issue #27: what real ML Dockerfiles do that lint misread. Each case is shaped like a pattern
seen in public Dockerfiles (vLLM, LocalAI, LLaMA-Factory, ComfyUI, diffusers, NeMo, detectron2,
lmdeploy...), written here from scratch: the idiom that must stay silent, or the problem that
must be found, at its line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Linter, assert_found_at, lint_text
from gpuship.cuda.torch import known_torch_releases, recorded_torch_releases, torch_release
from gpuship.report import Severity

TORCH_ARM_FILE = (
    "FROM nvidia/cuda:12.6.3-runtime-ubuntu24.04\n"
    'SHELL ["/bin/bash", "-o", "pipefail", "-c"]\nARG TORCH_CUDA=cu126\n'
    "RUN pip_args=(--no-cache-dir --break-system-packages) && \\\n"
    '    if [ "$TORCH_CUDA" = "cu118" ]; then \\\n'
    '        pip install "${pip_args[@]}" torch==2.8.0 '
    "--index-url https://download.pytorch.org/whl/cu118; \\\n"
    "    else \\\n"
    '        pip install "${pip_args[@]}" torch==2.8.0 '
    "--index-url https://download.pytorch.org/whl/cu126; \\\n"
    "    fi\n"
)
NCCL_SCRIPT_FILE = (
    "FROM nvidia/cuda:12.8.1-base-ubuntu24.04\nENV CUDA_FLAVOUR=cu12\n"
    "COPY setup.sh /tmp/setup.sh\nRUN bash /tmp/setup.sh\n"
)
NCCL_SCRIPT = (
    "#!/bin/bash\nset -euo pipefail\npython3 - <<'PY'\nimport torch\n"
    "if torch.version.cuda is None:\n    raise SystemExit('no CUDA')\nelse:\n"
    "    print(torch.version.cuda)\nPY\n"
    'if [[ "${CUDA_FLAVOUR}" == cu13* ]]; then\n'
    "    pip install --no-cache-dir nvidia-nccl-cu13==2.28.3\n"
    "else\n    pip install --no-cache-dir nvidia-nccl-cu12==2.28.3\nfi\n"
)

# (id, rule, Dockerfile, context files, expected (line, column) of each finding of the rule)
CASES = [
    # An ENV that expands an ARG is judged on the value the image gets.
    (
        "require-cuda-from-arg",
        "GSL507",
        "FROM nvidia/cuda:12.6.3-base-ubuntu24.04\nARG CUDA_MAJOR=12\n"
        'ENV NVIDIA_REQUIRE_CUDA="cuda>=${CUDA_MAJOR}.0"\n',
        {},
        [],
    ),
    (
        "require-cuda-from-arg-invalid",
        "GSL507",
        "FROM nvidia/cuda:12.6.3-base-ubuntu24.04\nARG CUDA_MAJOR=twelve\n"
        'ENV NVIDIA_REQUIRE_CUDA="cuda>=${CUDA_MAJOR}.0"\n',
        {},
        [(3, 5)],
    ),
    (
        "require-cuda-from-build-arg",
        "GSL507",
        "FROM nvidia/cuda:12.6.3-base-ubuntu24.04\nARG CUDA_MAJOR\n"
        'ENV NVIDIA_REQUIRE_CUDA="cuda>=${CUDA_MAJOR}.0"\n',
        {},
        [],
    ),
    # pip reads every index it is given and takes the build of the one that has the release
    # (issue #27): torch 2.6.0 has no cu121 wheel, but cu126 has it, so pip installs +cu126.
    (
        "index-url-without-release-extra-index-with-it",
        "GSL501",
        "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\nRUN pip install torch==2.6.0 "
        "--index-url https://download.pytorch.org/whl/cu121 "
        "--extra-index-url https://download.pytorch.org/whl/cu126\n",
        {},
        [],
    ),
    (
        "index-url-without-release-extra-index-with-it-same-cuda-as-base",
        "GSL502",
        "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\nRUN pip install torch==2.6.0 "
        "--index-url https://download.pytorch.org/whl/cu121 "
        "--extra-index-url https://download.pytorch.org/whl/cu126\n",
        {},
        [],
    ),
    (
        "pip-extra-index-url-variable-holds-two-urls",
        "GSL501",
        "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\n"
        'ENV PIP_EXTRA_INDEX_URL="https://download.pytorch.org/whl/cu121 '
        'https://download.pytorch.org/whl/cu126"\nRUN pip install torch==2.6.0\n',
        {},
        [],
    ),
    (
        "requirements-file-index-url-beside-extra-index-url",
        "GSL501",
        "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\nCOPY req.txt .\n"
        "RUN pip install -r req.txt --extra-index-url https://download.pytorch.org/whl/cu121\n",
        {"req.txt": "--index-url https://download.pytorch.org/whl/cu126\ntorch==2.6.0\n"},
        [],
    ),
    (
        "no-index-read-has-the-release",
        "GSL501",
        "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\nRUN pip install torch==2.6.0 "
        "--index-url https://download.pytorch.org/whl/cu121 "
        "--extra-index-url https://download.pytorch.org/whl/cu128\n",
        {},
        [(2, 17)],
    ),
    (
        "variable-index-without-release-beside-pypi-default-index",
        "GSL501",
        "FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\n"
        'ENV PIP_INDEX_URL="https://download.pytorch.org/whl/cu121"\n'
        "RUN pip install torch==2.6.0 --extra-index-url https://download.pytorch.org/whl/cu118\n",
        {},
        [],
    ),
    # Two indexes with the release and different CUDA: which one pip takes is not claimed.
    (
        "indexes-disagree-variant-unknown",
        "GSL502",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install torch==2.6.0 "
        "--index-url https://download.pytorch.org/whl/cu126 "
        "--extra-index-url https://download.pytorch.org/whl/cu124\n",
        {},
        [],
    ),
    (
        "indexes-agree-base-differs",
        "GSL502",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN pip install torch==2.6.0 "
        "--index-url https://download.pytorch.org/whl/cu121 "
        "--extra-index-url https://download.pytorch.org/whl/cu126\n",
        {},
        [(2, 17)],
    ),
    # ENV values are read as BuildKit reads them: an escaped space and adjacent quoted strings
    # (nvidia/cuda's own NVIDIA_REQUIRE_CUDA lines) are one value.
    (
        "require-cuda-escaped-space",
        "GSL507",
        "FROM nvidia/cuda:11.8.0-base-ubuntu22.04\n"
        "ENV NVIDIA_REQUIRE_CUDA=cuda>=11.8\\ brand=tesla,driver>=470,driver<471\n",
        {},
        [],
    ),
    (
        "require-cuda-adjacent-quoted-strings",
        "GSL507",
        "FROM nvidia/cuda:11.8.0-base-ubuntu22.04\n"
        'ENV NVIDIA_REQUIRE_CUDA="cuda>=11.8 "\\\n"brand=tesla,driver>=470,driver<471"\n',
        {},
        [],
    ),
    (
        "require-cuda-backslash-kept-inside-double-quotes",
        "GSL507",
        "FROM nvidia/cuda:11.8.0-base-ubuntu22.04\n"
        'ENV NVIDIA_REQUIRE_CUDA="cuda>=11.8\\ brand=tesla"\n',
        {},
        [(2, 5)],
    ),
    # One ENV expands all its values with those from before it: CUDA_MAJOR is still "twelve".
    (
        "require-cuda-from-env-on-the-same-line",
        "GSL507",
        "FROM nvidia/cuda:12.6.3-base-ubuntu24.04\nARG CUDA_MAJOR=twelve\n"
        'ENV CUDA_MAJOR=12 NVIDIA_REQUIRE_CUDA="cuda>=${CUDA_MAJOR}.0"\n',
        {},
        [(3, 19)],
    ),
    # Names and values that hold no credential (vLLM documents OPENAI_API_KEY=EMPTY); a weak
    # real password and real tokens stay errors.
    (
        "placeholder-api-key-and-non-secret-names",
        "GSL901",
        "FROM python:3.12-slim\nENV OPENAI_API_KEY=EMPTY\nARG HF_TOKEN_SECRET_ID=hf\n"
        "ENV TOKEN_BUCKET_RATE=10\n",
        {},
        [],
    ),
    (
        "arg-names-the-secret-mount",
        "GSL901",
        "FROM python:3.12-slim\nARG HF_SECRET=hf_token\n"
        "RUN --mount=type=secret,id=${HF_SECRET},env=HF_TOKEN python -c 'import os'\n",
        {},
        [],
    ),
    (
        "secret-id-arg",
        "GSL901",
        "FROM python:3.12-slim\nARG SECRET_ID=hf_token\n"
        "RUN --mount=type=secret,id=${SECRET_ID} cat /run/secrets/hf_token\n",
        {},
        [],
    ),
    (
        "real-credentials-and-a-weak-password",
        "GSL901",
        "FROM python:3.12-slim\nENV HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789\n"
        "ENV AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
        "ENV DB_PASSWORD=changeme\nARG OPENAI_API_KEY\n",
        {},
        [(2, 5), (3, 5), (4, 5), (5, 5)],
    ),
    # `>/dev/null` after a pinned spec or a file is a redirect meant as one; `pkg>=1` is not.
    (
        "redirect-to-dev-null-after-a-pin",
        "GSL109",
        "FROM python:3.12-slim\nRUN pip install --no-cache-dir -q numpy==1.26.4>/dev/null\n"
        "COPY requirements.txt .\n"
        "RUN pip install --no-cache-dir -q -r requirements.txt>/dev/null\n",
        {"requirements.txt": "numpy==1.26.4\n"},
        [],
    ),
    (
        "unquoted-specifiers-are-redirects",
        "GSL109",
        "FROM python:3.12-slim\nRUN pip install --no-cache-dir torch>=2.1 numpy<2 "
        "transformers[torch]>4.40\n",
        {},
        [(2, 32), (2, 43), (2, 51)],
    ),
    # A setup.py that sets its own arch list builds for it, whatever the environment says.
    (
        "setup-py-sets-its-own-arch-list",
        "GSL506",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nCOPY . /src\nWORKDIR /src\n"
        "RUN pip install --no-cache-dir --no-build-isolation .\n",
        {
            "setup.py": "import os\nfrom torch.utils.cpp_extension import CUDAExtension\n"
            'os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "8.0;9.0")\n'
            "ext = CUDAExtension('k', ['k.cu'])\n"
        },
        [],
    ),
    (
        "setup-py-passes-gencode",
        "GSL506",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nCOPY . /src\nWORKDIR /src\n"
        "RUN pip install --no-cache-dir --no-build-isolation .\n",
        {
            "setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"
            "ext = CUDAExtension('k', ['k.cu'], extra_compile_args={'nvcc': "
            "['-gencode=arch=compute_90,code=sm_90']})\n"
        },
        [],
    ),
    (
        "setup-py-leaves-the-arch-list-to-torch",
        "GSL506",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nCOPY . /src\nWORKDIR /src\n"
        "RUN pip install --no-cache-dir --no-build-isolation .\n",
        {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"},
        [(4, 53)],
    ),
    # cuDNN 8.9.7's only CUDA 12 build is +cuda12.2, and it runs on any CUDA 12 minor.
    (
        "cudnn8-cuda12-build-on-a-later-cuda12-minor",
        "GSL509",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y "
        "--no-install-recommends libcudnn8=8.9.7.29-1+cuda12.2 && rm -rf /var/lib/apt/lists/*\n",
        {},
        [],
    ),
    (
        "cudnn8-cuda11-build-on-cuda12",
        "GSL509",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y "
        "--no-install-recommends libcudnn8=8.9.7.29-1+cuda11.8 && rm -rf /var/lib/apt/lists/*\n",
        {},
        [(2, 66)],
    ),
    # A clone checked out at a ref gpuship cannot tell from a branch is not the default
    # branch: a note that says so. The findings here are notes.
    (
        "clone-checked-out-at-a-variable-ref",
        "GSL106",
        "FROM ubuntu:22.04\nARG LLAMA_REF=b3561\nWORKDIR /src\n"
        "RUN git clone https://github.com/ggml-org/llama.cpp && cd llama.cpp "
        "&& git checkout ${LLAMA_REF}\n",
        {},
        [(4, 15)],
    ),
    # pip's general options may precede the subcommand.
    (
        "pip-option-before-install",
        "GSL301",
        "FROM python:3.12-slim\nRUN pip --no-cache-dir install requests==2.32.3\n"
        "RUN python3 -m pip --disable-pip-version-check --no-cache-dir install rich==13.9.4\n"
        "RUN uv --no-cache pip install --system httpx==0.28.1\n",
        {},
        [],
    ),
    (
        "pip-option-before-install-cache-kept",
        "GSL301",
        "FROM python:3.12-slim\nRUN pip -q --log /tmp/pip.log install requests==2.32.3\n",
        {},
        [(2, 5)],
    ),
    # `pip config set global.no-cache-dir true` keeps the cache off for later installs.
    (
        "pip-config-no-cache",
        "GSL301",
        "FROM python:3.12-slim AS base\nRUN pip config set global.no-cache-dir true\n"
        "FROM base\nRUN pip install requests==2.32.3\n",
        {},
        [],
    ),
    # HOME moves pip's cache; the script the RUN runs removes it.
    (
        "pip-cache-under-home",
        "GSL301",
        "FROM python:3.12-slim\nENV HOME=/workspace\nCOPY build.sh install.sh /workspace/\n"
        "RUN /workspace/build.sh\n",
        {
            "build.sh": "bash /workspace/install.sh\nrm -rf /workspace/.cache/pip\n",
            "install.sh": "pip install requests==2.32.3\n",
        },
        [],
    ),
    # `--dry-run` installs nothing; `$(...)` is decided when the build runs.
    (
        "pip-dry-run",
        "GSL105",
        "FROM python:3.12-slim\nRUN pip install --dry-run torch torchvision "
        "--index-url https://download.pytorch.org/whl/cu126\n",
        {},
        [],
    ),
    (
        "conda-spec-from-substitution",
        "GSL105",
        "FROM continuumio/miniconda3:24.7.1-0\nRUN conda install -y "
        'pytorch-cuda=$(echo "$CUDA" | cut -d. -f1,2) && conda clean -afy\n',
        {},
        [],
    ),
    (
        "pip-option-value-is-a-number",
        "GSL105",
        "FROM python:3.12-slim\nRUN pip install --resume-retries 999 --no-cache-dir "
        "torch==2.7.1 --timeout 120\n",
        {},
        [],
    ),
    # `conda run -n ENV pip install ...` is a pip install.
    (
        "conda-run-pip",
        "GSL105",
        "FROM continuumio/miniconda3:24.7.1-0\nRUN conda create -n ml python=3.11 -y "
        "&& conda clean -afy\nRUN conda run -n ml --no-capture-output pip install "
        "--no-cache-dir transformers\n",
        {},
        [(3, 68)],
    ),
    (
        "micromamba-run-pip-cache",
        "GSL301",
        "FROM mambaorg/micromamba:1.5.10\nRUN micromamba run -n base pip install rich==13.9.4\n",
        {},
        [(2, 28)],
    ),
    # A clone moved to a commit (here by a later RUN, or a `$(...)` tag) is pinned.
    (
        "clone-then-checkout-later-run",
        "GSL106",
        "FROM python:3.12-slim\nRUN git clone https://github.com/org/kernels.git /src\n"
        "WORKDIR /src\nRUN git checkout 3f2c1a9e4b7d\n",
        {},
        [],
    ),
    (
        "clone-then-unrelated-checkout-later",
        "GSL106",
        "FROM python:3.12-slim\nRUN git clone https://github.com/org/sam.git /opt/sam\n"
        "WORKDIR /opt/other\nRUN git checkout 3f2c1a9e4b7d\n",
        {},
        [(2, 15)],
    ),
    (
        "clone-then-reset-to-newest-tag",
        "GSL106",
        "FROM python:3.12-slim\nRUN git clone https://github.com/org/ui.git /ui && cd /ui "
        '&& git reset --hard "$(git tag | sort -V | tail -1)"\n',
        {},
        [],
    ),
    (
        "clone-component-tag",
        "GSL106",
        "FROM python:3.12-slim\nRUN git clone -b core_v0.13.0 https://github.com/org/lm.git\n",
        {},
        [],
    ),
    (
        "clone-release-branch",
        "GSL106",
        "FROM python:3.12-slim\nRUN pip install --no-cache-dir "
        "git+https://github.com/org/engine.git@release_v2.10\n",
        {},
        [(2, 32)],
    ),
    (
        "clone-in-a-function",
        "GSL106",
        "FROM python:3.12-slim\nCOPY fetch.sh /opt/\nRUN bash /opt/fetch.sh\n",
        {"fetch.sh": 'shallow() {\n  git clone --depth=1 "$@"\n}\nshallow -b v1.2.0 https://x/y\n'},
        [],
    ),
    (
        "clone-continued-line",
        "GSL106",
        "FROM python:3.12-slim\nRUN git clone --depth=1 \\\n    https://github.com/org/nodes.git "
        "/opt/nodes && echo $(date)\n",
        {},
        [(3, 5)],
    ),
    # `make` alone compiles nothing; clang-format is no compiler.
    (
        "make-alone",
        "GSL402",
        "FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y --no-install-recommends "
        "make curl clang-format && rm -rf /var/lib/apt/lists/*\n",
        {},
        [],
    ),
    (
        "make-beside-gcc",
        "GSL402",
        "FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y --no-install-recommends "
        "make gcc && rm -rf /var/lib/apt/lists/*\n",
        {},
        [(2, 66)],
    ),
    # Triton builds its launcher with the system C compiler when a kernel first runs: a runtime
    # image with triton/vllm needs gcc. cmake is still a build tool; tritonclient compiles nothing.
    (
        "compiler-kept-for-triton",
        "GSL402",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y "
        "--no-install-recommends gcc g++ python3-dev && rm -rf /var/lib/apt/lists/*\n"
        "RUN pip install vllm==0.6.3\n",
        {},
        [],
    ),
    (
        "build-tool-beside-triton-compiler",
        "GSL402",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y "
        "build-essential cmake && rm -rf /var/lib/apt/lists/*\nRUN pip install triton==3.1.0\n",
        {},
        [(2, 58)],
    ),
    (
        "compiler-beside-tritonclient",
        "GSL402",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y "
        "gcc && rm -rf /var/lib/apt/lists/*\nRUN pip install tritonclient==2.50.0\n",
        {},
        [(2, 42)],
    ),
    # BuildKit reads COPY sources from the context root: `..` does not leave it.
    ("copy-dotdot", "GSL002", "FROM python:3.12-slim\nCOPY .. /app\n", {"a.py": ""}, []),
    # An ARG before the first FROM never reaches a RUN or the history.
    (
        "global-token-arg",
        "GSL901",
        'ARG runtime_token=""\nFROM python:3.12-slim\n'
        "RUN --mount=type=secret,id=runtime_token,env=TOKEN ./fetch\n",
        {},
        [],
    ),
    (
        "stage-token-arg",
        "GSL901",
        'ARG runtime_token=""\nFROM python:3.12-slim\nARG runtime_token\n',
        {},
        [(3, 5)],
    ),
    # Dependency layering as uv, poetry and setuptools projects document it.
    (
        "uv-no-install-project",
        "GSL601",
        "FROM python:3.12-slim\nWORKDIR /app\nCOPY pyproject.toml uv.lock ./\n"
        "RUN uv sync --frozen --no-install-project --no-cache\nCOPY . .\n"
        "RUN uv sync --frozen --no-cache\n",
        {"pyproject.toml": "[project]\nname='a'\n", "uv.lock": "", "a.py": ""},
        [],
    ),
    (
        "poetry-no-root",
        "GSL601",
        "FROM python:3.12-slim\nWORKDIR /app\nCOPY pyproject.toml poetry.lock ./\n"
        "RUN poetry install --no-root --no-cache\nCOPY . .\nRUN poetry install --no-cache\n",
        {"pyproject.toml": "", "poetry.lock": "", "a.py": ""},
        [],
    ),
    (
        "pyproject-skeleton",
        "GSL601",
        "FROM python:3.12-slim\nWORKDIR /app\nCOPY pyproject.toml setup.py build_hooks.py ./\n"
        "COPY pkg/__init__.py ./pkg/\nRUN pip install --no-cache-dir -e .\n",
        {"pyproject.toml": "", "setup.py": "", "build_hooks.py": "", "pkg/__init__.py": ""},
        [],
    ),
    (
        "whole-copy-then-sync",
        "GSL601",
        "FROM python:3.12-slim\nWORKDIR /app\nCOPY . .\nRUN uv sync --frozen --no-cache\n",
        {"pyproject.toml": "", "uv.lock": "", "a.py": ""},
        [(4, 5)],
    ),
    (
        "installer-dir-run-by-next-step",
        "GSL601",
        "FROM python:3.12-slim\nCOPY tools/installers /tmp/installers/\n"
        "RUN bash /tmp/installers/install_audio.sh\n",
        {
            "tools/installers/install_audio.sh": "pip install --no-cache-dir sox==1.5.0\n",
            "tools/installers/helper.py": "",
        },
        [],
    ),
    # A prebuilt wheel compiles nothing, before or after a source copy.
    (
        "prebuilt-wheel-after-copy",
        "GSL602",
        "FROM python:3.12-slim\nCOPY app.py /app/\nRUN pip install --no-cache-dir "
        "https://github.com/org/fa/releases/download/v2.7.4/"
        "flash_attn-2.7.4+cu12torch2.6cxx11abiFALSE-cp312-cp312-linux_x86_64.whl\n",
        {"app.py": ""},
        [],
    ),
    (
        "named-jit-package-after-copy",
        "GSL602",
        "FROM python:3.12-slim\nCOPY app.py /app/\nRUN pip install --no-cache-dir "
        "deepspeed==0.16.4 xformers==0.0.29\n",
        {"app.py": ""},
        [],
    ),
    (
        "flash-attn-after-copy",
        "GSL602",
        "FROM python:3.12-slim\nCOPY app.py /app/\nRUN pip install --no-cache-dir "
        "flash-attn==2.7.4.post1\n",
        {"app.py": ""},
        [(3, 32)],
    ),
    # Misses the issue lists, now found (and their good twins).
    (
        "extra-index-cu118-unpinned",
        "GSL510",
        "FROM nvidia/cuda:11.8.0-base-ubuntu22.04\nRUN pip install --no-cache-dir torch "
        "--extra-index-url https://download.pytorch.org/whl/cu118\n",
        {},
        [(2, 32)],
    ),
    (
        "extra-index-cu118-uv-prefers-it",
        "GSL510",
        "FROM nvidia/cuda:11.8.0-base-ubuntu22.04\nRUN uv pip install --system --no-cache torch "
        "--extra-index-url https://download.pytorch.org/whl/cu118\n",
        {},
        [],
    ),
    (
        "extra-index-cu118-uv-best-match",
        "GSL510",
        "FROM nvidia/cuda:11.8.0-base-ubuntu22.04\nRUN uv pip install --system --no-cache torch "
        "--index-strategy unsafe-best-match "
        "--extra-index-url https://download.pytorch.org/whl/cu118\n",
        {},
        [(2, 40)],
    ),
    (
        "wheel-for-other-python",
        "GSL511",
        "FROM python:3.10-slim\nRUN pip install --no-cache-dir "
        "/wheels/xformers-0.0.28.post3-cp311-cp311-manylinux_2_28_x86_64.whl\n",
        {},
        [(2, 32)],
    ),
    (
        "wheel-python-unknown-after-uv-venv",
        "GSL511",
        "FROM python:3.10-slim\nRUN uv venv -p 3.11 /venv\nRUN pip install --no-cache-dir "
        "/wheels/xformers-0.0.28.post3-cp311-cp311-manylinux_2_28_x86_64.whl\n",
        {},
        [],
    ),
    (
        "flashinfer-index-other-torch",
        "GSL511",
        "FROM python:3.11-slim\nRUN pip install --no-cache-dir torch==2.6.0\n"
        "RUN pip install --no-cache-dir flashinfer-python -f https://flashinfer.ai/whl/cu124/torch2.4/\n",
        {},
        [(3, 32)],
    ),
    (
        "cudnn8-on-cudnn9-base",
        "GSL509",
        "FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\nRUN apt-get update && apt-get install "
        "-y --no-install-recommends libcudnn8 && rm -rf /var/lib/apt/lists/*\n",
        {},
        [(2, 66)],
    ),
    (
        "cudnn9-on-cudnn9-base",
        "GSL509",
        "FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime\nRUN apt-get update && apt-get install "
        "-y --no-install-recommends libcudnn9-cuda-12 && rm -rf /var/lib/apt/lists/*\n",
        {},
        [],
    ),
    (
        "requirements-from-branch-url",
        "GSL106",
        "FROM python:3.12-slim\nRUN pip install --no-cache-dir -r "
        "https://github.com/org/app/raw/main/requirements.txt\n",
        {},
        [(2, 35)],
    ),
    (
        "conda-installer-cleaned",
        "GSL303",
        "FROM ubuntu:22.04\nRUN bash Miniforge3-Linux-x86_64.sh -b -p /opt/conda "
        "&& /opt/conda/bin/conda clean -afy\n",
        {},
        [],
    ),
    (
        "conda-installer-left",
        "GSL303",
        "FROM ubuntu:22.04\nRUN bash Miniforge3-Linux-x86_64.sh -b -p /opt/conda\n",
        {},
        [(2, 5)],
    ),
    (
        "downloaded-deb-after-cd",
        "GSL702",
        "FROM ubuntu:22.04\nRUN cd /tmp && wget -q https://example.com/tool_1.0_amd64.deb "
        "&& dpkg -i tool_1.0_amd64.deb && rm -rf /var/lib/apt/lists/*\n",
        {},
        [(2, 24)],
    ),
    (
        "downloaded-into-tmp-dir-removed",
        "GSL702",
        "FROM ubuntu:22.04\nRUN D=$(mktemp -d) && cd $D && wget -q https://example.com/t.deb "
        "&& dpkg -i t.deb && rm -rf $D\n",
        {},
        [],
    ),
    # `find .` searches the working directory: WORKDIR, or where `cd` went.
    (
        "wheel-deleted-by-find-in-workdir",
        "GSL702",
        "FROM python:3.12-slim\nWORKDIR /tmp/build\nRUN wget -q https://example.com/"
        "pkg-1.0-py3-none-any.whl && pip install --no-cache-dir ./*.whl "
        "&& find . -name '*.whl' -delete\n",
        {},
        [],
    ),
    (
        "wheel-left-by-find-in-another-directory",
        "GSL702",
        "FROM python:3.12-slim\nWORKDIR /tmp/build\nRUN wget -q https://example.com/"
        "pkg-1.0-py3-none-any.whl && pip install --no-cache-dir ./*.whl "
        "&& cd /opt && find . -name '*.whl' -delete\n",
        {},
        [(3, 13)],
    ),
    (
        "download-piped-to-tar",
        "GSL702",
        "FROM ubuntu:22.04\nRUN curl -fsSL https://example.com/tool.tar.gz | tar xz -C /opt\n",
        {},
        [],
    ),
    (
        "test-fixture-key-in-tree-copy",
        "GSL905",
        "FROM python:3.12-slim\nCOPY . /app\n",
        {"tests/resources/key.pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n", "a.py": ""},
        [],
    ),
    (
        "key-swept-in-by-tree-copy",
        "GSL905",
        "FROM python:3.12-slim\nCOPY . /app\n",
        {"deploy/key.pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n", "a.py": ""},
        [(2, 6)],
    ),
    # A wheelhouse built earlier (`pip wheel -w /wheels`) is where --no-index installs come
    # from: its wheels are the pins. A find-links page on the web still moves.
    (
        "no-index-local-wheelhouse",
        "GSL105",
        "FROM python:3.12-slim\nCOPY --from=wheels /wheels /wheels\nRUN pip install --no-index "
        "--find-links=/wheels flash-attn xformers && pip install --no-index -f file:///w x\n",
        {},
        [],
    ),
    (
        "no-index-remote-find-links",
        "GSL105",
        "FROM python:3.12-slim\nRUN pip install --no-index "
        "-f https://download.pytorch.org/whl/torch_stable.html torch\n"
        "RUN pip install --find-links=/wheels flash-attn\n",
        {},
        [(2, 82), (3, 38)],
    ),
    (
        "conda-updates-itself",
        "GSL105",
        "FROM continuumio/miniconda3:24.7.1-0\nRUN conda update -y conda && "
        "conda update -n base -c defaults conda && mamba update -y mamba\n"
        "RUN conda update -y numpy\n",
        {},
        [(3, 21)],
    ),
    # Dependencies first (cached layer), then the project alone: the second downloads nothing.
    (
        "poetry-only-root-after-dependencies",
        "GSL306",
        "FROM python:3.12-slim\nCOPY pyproject.toml poetry.lock /app/\nWORKDIR /app\n"
        "RUN poetry install --no-root\nCOPY . /app\nRUN poetry install --only-root\n",
        {"pyproject.toml": "[tool.poetry]\nname = 'a'\n", "poetry.lock": ""},
        [(4, 5)],
    ),
    # `identity` is a common package name; an SSH key by that name lives in `.ssh/`.
    (
        "identity-package-directory-copied",
        "GSL905",
        "FROM python:3.12-slim\nCOPY identity/ /app/identity/\nCOPY identity /app/identity\n",
        {"identity/__init__.py": "", "identity/identity": "x = 1\n"},
        [],
    ),
    (
        "identity-key-copied-into-ssh",
        "GSL905",
        "FROM python:3.12-slim\nCOPY identity /root/.ssh/\nCOPY deploy/k /root/.ssh/identity\n",
        {"identity": "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n", "deploy/k": "k\n"},
        [(2, 6), (3, 6)],
    ),
    (
        "id-rsa-directory-is-no-key",
        "GSL905",
        "FROM python:3.12-slim\nCOPY id_rsa/ /app/id_rsa/\n",
        {},
        [],
    ),
    (
        "sudoers-file-copied",
        "GSL906",
        "FROM python:3.12-slim\nCOPY sudoers.d/app /etc/sudoers.d/app\nUSER app\n",
        {"sudoers.d/app": "# the app user\napp ALL=(ALL:ALL) NOPASSWD: ALL\n"},
        [(2, 6)],
    ),
    (
        "model-downloaded-by-script-copied",
        "GSL201",
        "FROM python:3.12-slim AS fetch\nCOPY fetch.py /\nRUN python /fetch.py\n"
        "FROM python:3.12-slim\nCOPY --from=fetch /root/.cache/huggingface/hub /hf\n",
        {"fetch.py": "from huggingface_hub import snapshot_download\nsnapshot_download('o/m')\n"},
        [(5, 19)],
    ),
    (
        "model-downloaded-by-make",
        "GSL202",
        "FROM python:3.12-slim\nCOPY Makefile /src/\nWORKDIR /src\nRUN make all\n",
        {"Makefile": "all: model\nmodel:\n\t@wget -q -O $(OUT) https://example.com/m.gguf\n"},
        [(4, 10)],
    ),
    # A bash array before a shell `if` on a build arg: read as `name=` and a subshell, it hid
    # the branch, so the cu118 arm the default build never takes was a false GSL501 error.
    (
        "array-before-branch-untaken-arm",
        "GSL501",
        TORCH_ARM_FILE,
        {},
        [],
    ),
    (
        "array-before-branch-taken-arm",
        "GSL501",
        TORCH_ARM_FILE.replace("TORCH_CUDA=cu126", "TORCH_CUDA=cu118"),
        {},
        [(6, 38)],
    ),
    # A script's Python heredoc (`if ...:`/`else:`) before its shell branches on an ENV: the
    # body is data, and only the arm for the stage's CUDA_FLAVOUR installs.
    (
        "heredoc-body-before-branch",
        "GSL509",
        NCCL_SCRIPT_FILE,
        {"setup.sh": NCCL_SCRIPT},
        [],
    ),
    (
        "heredoc-body-before-branch-taken-arm",
        "GSL509",
        NCCL_SCRIPT_FILE.replace("CUDA_FLAVOUR=cu12", "CUDA_FLAVOUR=cu13"),
        {"setup.sh": NCCL_SCRIPT},
        [(11, 32)],
    ),
]


def test_a_compiler_kept_for_triton_is_named_with_why(lint: Linter) -> None:
    findings = lint(
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y "
        "gcc cmake && rm -rf /var/lib/apt/lists/*\nRUN pip install triton==3.1.0\n"
    )
    (hit,) = [f for f in findings if f.rule == "GSL402"]
    assert hit.message.startswith("cmake stay")
    assert "(gcc not counted: triton compiles with the system C/C++ compiler" in hit.message


# An install script's pattern: the CUDA compiler packages stay because the image points
# Triton's ptxas at them; cmake beside them is still a finding.
TRITON_PTXAS = (
    "FROM nvidia/cuda:12.8.1-runtime-ubuntu22.04\n"
    "RUN apt-get update && apt-get install -y --no-install-recommends "
    "cuda-minimal-build-12-8 cmake && rm -rf /var/lib/apt/lists/*\n"
    "ENV TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas\n"
)


def test_cuda_compilers_the_image_points_triton_at_are_kept(lint: Linter) -> None:
    (hit,) = [f for f in lint(TRITON_PTXAS) if f.rule == "GSL402"]
    assert hit.message.startswith("cmake stay"), hit.message
    assert "(cuda-minimal-build-12-8 not counted: the image sets TRITON_PTXAS_PATH" in (hit.message)


def test_without_triton_s_variable_in_the_image_the_cuda_compilers_are_findings(
    lint: Linter,
) -> None:
    without = TRITON_PTXAS.replace("ENV TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas\n", "")
    # Set only in another stage: not in the environment of the image that runs.
    elsewhere = "FROM ubuntu:22.04 AS tools\nENV TRITON_PTXAS_PATH=/opt/ptxas\n" + without
    for dockerfile in (without, elsewhere):
        (hit,) = [f for f in lint(dockerfile) if f.rule == "GSL402"]
        assert hit.message.startswith("cuda-minimal-build-12-8, cmake stay"), hit.message


def test_a_file_without_a_stage_has_no_final_image_to_read_triton_s_variables_from(
    lint: Linter,
) -> None:
    # The fuzz target's crash: `ARG X` alone (no FROM) made the toolchain rule index no stage.
    assert [f.rule for f in lint("ARG TRITON_PTXAS_PATH\n") if f.rule == "GSL402"] == []


def test_a_source_above_the_context_is_outside_it_not_ignored(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("")  # beside the context, where `..` would point
    context = tmp_path / "docker"
    context.mkdir()
    findings = lint_text(context, "FROM python:3.12-slim\nCOPY ../setup.py .\n")
    (hit,) = [f for f in findings if f.rule == "GSL002"]
    assert "excluded" not in hit.message
    assert "../setup.py is outside the build context" in hit.message
    assert "reads setup.py from the context's root" in hit.message


def test_torch_messages_name_only_releases_whose_wheels_the_kb_records(lint: Linter) -> None:
    # The knowledge base knows newer releases exist (on PyPI) before it records their wheels;
    # `gpuship kb torch` says "none recorded" for those, and lint must not claim more.
    unrecorded = [v for v in known_torch_releases() if not torch_release(v).variants]
    newest = recorded_torch_releases()[-1]
    assert torch_release(newest).variants and unrecorded and unrecorded[-1] > newest
    findings = lint(
        "FROM nvidia/cuda:11.8.0-base-ubuntu22.04\nRUN pip install --no-cache-dir torch "
        "--extra-index-url https://download.pytorch.org/whl/cu118 && pip install torch==1.12.1\n"
    )
    messages = [f.message for f in findings if f.rule in ("GSL508", "GSL510")]
    assert len(messages) == 2, messages
    assert f"records the wheels of torch up to {newest})" in messages[0]
    assert f"records the wheels of torch 1.13 to {newest})" in messages[1]
    assert not any(f"torch {v}" in m for v in unrecorded for m in messages)


def test_a_clone_checked_out_at_an_unknown_ref_is_a_note(lint: Linter) -> None:
    findings = lint(
        "FROM ubuntu:22.04\nARG LLAMA_REF=b3561\nRUN git clone https://github.com/ggml-org/"
        "llama.cpp && cd llama.cpp && git checkout ${LLAMA_REF}\n"
    )
    (hit,) = [f for f in findings if f.rule == "GSL106"]
    assert hit.severity is Severity.NOTE and "default branch" not in hit.message
    assert "`b3561` (${LLAMA_REF})" in hit.message


@pytest.mark.parametrize(
    ("rule", "dockerfile", "files", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_real_world_pattern(
    lint: Linter,
    rule: str,
    dockerfile: str,
    files: dict[str, str | bytes | int],
    expected: list[tuple[int, int]],
) -> None:
    assert_found_at(lint, rule, dockerfile, files, expected)
