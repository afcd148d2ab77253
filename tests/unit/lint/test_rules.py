"""Each rule: a bad case that fires at the exact line and column, and good cases (including
the accepted idioms) that stay silent."""

from __future__ import annotations

import pytest

from conftest import Linter, assert_found_at, positions

# (rule, Dockerfile, context files, expected (line, column) of each finding)
BAD = [
    ("GSL101", "FROM python\n", {}, [(1, 6)]),
    ("GSL101", "ARG BASE=pytorch/pytorch:latest\nFROM ${BASE}\n", {}, [(2, 6)]),
    ("GSL102", "FROM ghcr.io/org/tgi:latest-intel\n", {}, [(1, 6)]),
    ("GSL102", "FROM nvcr.io/nvidia/pytorch:nightly\n", {}, [(1, 6)]),
    ("GSL103", "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n", {}, [(1, 6)]),
    (
        "GSL105",
        "FROM python:3.12\nRUN pip install --no-cache-dir torch==2.5.1 \\\n"
        "    transformers>=4.40\n",
        {},
        [(3, 5)],
    ),
    (
        "GSL105",
        "FROM python:3.12\nRUN uv pip install --system --no-cache 'numpy>=1.26'\n",
        {},
        [(2, 40)],
    ),
    (
        "GSL105",
        "FROM python:3.12\nRUN conda install -y pytorch && conda clean -afy\n",
        {},
        [(2, 22)],
    ),
    (
        "GSL105",
        "FROM python:3.12\nCOPY requirements.txt /tmp/\n"
        "RUN pip install --no-cache-dir -r /tmp/requirements.txt\n",
        {"requirements.txt": "numpy==1.26.4\n  torch>=2.1  # gpu\n"},
        [(2, 3)],
    ),
    (
        "GSL105",
        "FROM python:3.12\nCOPY install.sh /opt/\nRUN bash /opt/install.sh\n",
        {"install.sh": "set -e\npip install --no-cache-dir accelerate\n"},
        [(2, 28)],
    ),
    (
        "GSL105",
        "FROM python:3.12\nWORKDIR /app\nCOPY . .\nRUN pip install --no-cache-dir .\n",
        {
            "pyproject.toml": "[project]\nname = 'a'\ndependencies = [\n  'numpy==1.26.4',\n"
            "  'torch>=2.1',\n]\n"
        },
        [(5, 4)],
    ),
    (
        "GSL106",
        "FROM python:3.12\nRUN pip install --no-cache-dir git+https://github.com/o/r\n",
        {},
        [(2, 32)],
    ),
    ("GSL106", "FROM python:3.12\nRUN git clone https://github.com/o/r /src\n", {}, [(2, 15)]),
    (
        "GSL107",
        "FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y curl git \\\n"
        " && rm -rf /var/lib/apt/lists/*\n",
        {},
        [(2, 42)],
    ),
    (
        "GSL108",
        "FROM ubuntu:22.04\nRUN curl -fsSLo /t.tgz https://e.com/t.tgz && tar xzf /t.tgz\n",
        {},
        [(2, 24)],
    ),
    ("GSL108", "FROM ubuntu:22.04\nADD https://e.com/t.tgz /tmp/\n", {}, [(2, 5)]),
    ("GSL109", "FROM python:3.12\nRUN pip install --no-cache-dir numpy>=1.26\n", {}, [(2, 32)]),
    (
        "GSL201",
        "FROM python:3.12\nCOPY model.safetensors /m/\n",
        {"model.safetensors": 10},
        [(2, 6)],
    ),
    (
        "GSL201",
        "FROM python:3.12\nWORKDIR /app\nCOPY . .\n",
        {"ckpt/unet.safetensors": 3 * 1024 * 1024, "app.py": "print()\n"},
        [(3, 6)],
    ),
    ("GSL202", "FROM python:3.12\nRUN huggingface-cli download gpt2\n", {}, [(2, 5)]),
    (
        "GSL202",
        "FROM python:3.12\nRUN python -c 'from transformers import AutoModel; "
        'AutoModel.from_pretrained("gpt2")\'\n',
        {},
        [(2, 62)],
    ),
    (
        "GSL202",
        "FROM python:3.12\nRUN python3 <<EOF\nfrom huggingface_hub import "
        "snapshot_download\nsnapshot_download('gpt2')\nEOF\n",
        {},
        [(4, 1)],
    ),
    ("GSL301", "FROM python:3.12\nRUN pip install torch==2.5.1\n", {}, [(2, 5)]),
    (
        "GSL105",
        'FROM python:3.12\nRUN ["pip", "install", "--no-cache-dir", "torch"]\n'
        'RUN ["/bin/sh", "-c", "pip install --no-cache-dir numpy"]\n',
        {},
        [(2, 43), (3, 51)],
    ),
    ("GSL302", "FROM python:3.12\nRUN uv pip install --system torch==2.5.1\n", {}, [(2, 5)]),
    (
        "GSL303",
        "FROM continuumio/miniconda3:24.7.1-0\nRUN conda install -y numpy=1.26.4\n",
        {},
        [(2, 5)],
    ),
    (
        "GSL304",
        "FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y curl=7.81\n",
        {},
        [(2, 13)],
    ),
    ("GSL305", "FROM alpine:3.20\nRUN apk add curl=8.9.1-r0\n", {}, [(2, 5)]),
    ("GSL401", 'FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nCMD ["python3"]\n', {}, [(1, 6)]),
    (
        "GSL402",
        "FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y build-essential=12.9"
        " \\\n && rm -rf /var/lib/apt/lists/*\n",
        {},
        [(2, 42)],
    ),
    (
        "GSL501",
        "FROM ubuntu:22.04\nRUN pip install --no-cache-dir torch==2.6.0 --index-url "
        "https://download.pytorch.org/whl/cu121\n",
        {},
        [(2, 32)],
    ),
    (
        "GSL502",
        "ARG CUDA=12.1.1\nFROM nvidia/cuda:${CUDA}-base-ubuntu22.04\n"
        "ARG TORCH_INDEX=cu126\nRUN pip install --no-cache-dir torch==2.6.0 --index-url "
        "https://download.pytorch.org/whl/${TORCH_INDEX}\n",
        {},
        [(4, 32)],
    ),
    (
        "GSL503",
        "FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04\nRUN pip install "
        "--no-cache-dir torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124\n",
        {},
        [(2, 32)],
    ),
    (
        "GSL504",
        "FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nENV NVIDIA_DISABLE_REQUIRE=true\n",
        {},
        [(2, 5)],
    ),
    (
        "GSL505",
        "FROM nvidia/cuda:12.6.3-base-ubuntu22.04\nENV NVIDIA_REQUIRE_CUDA=cuda>=11.0\n",
        {},
        [(2, 5)],
    ),
    (
        "GSL506",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN pip install --no-cache-dir "
        "--no-build-isolation git+https://github.com/NVIDIA/apex.git@25.08\n",
        {},
        [(2, 53)],
    ),
    (
        "GSL506",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n"
        'RUN CMAKE_ARGS="-DGGML_CUDA=on" pip install --no-cache-dir llama-cpp-python\n',
        {},
        [(2, 60)],
    ),
    (
        "GSL507",
        "FROM nvidia/cuda:12.4.1-base-ubuntu22.04\n"
        'ENV NVIDIA_REQUIRE_CUDA="cuda>=12.4 driver=>535"\n',
        {},
        [(2, 5)],
    ),
    (
        "GSL510",
        "FROM ubuntu:22.04\nRUN pip install --no-cache-dir torch "
        "--extra-index-url https://download.pytorch.org/whl/cu118\n",
        {},
        [(2, 32)],
    ),
    (
        "GSL511",
        "FROM pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime\nRUN pip install --no-cache-dir "
        "https://example.com/fa/flash_attn-2.7.4+cu12torch2.4cxx11abiFALSE-cp311-cp311-"
        "linux_x86_64.whl\n",
        {},
        [(2, 32)],
    ),
    (
        "GSL512",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "RUN apt-get install -y --no-install-recommends libnvidia-compute-550\n",
        {},
        [(2, 48)],
    ),
    (
        "GSL601",
        "FROM python:3.12\nCOPY . /app\nRUN pip install --no-cache-dir -r /app/requirements.txt\n",
        {"requirements.txt": "numpy==1.26.4\n"},
        [(3, 5)],
    ),
    ("GSL602", "FROM python:3.12\nCOPY . /app\nRUN huggingface-cli download gpt2\n", {}, [(3, 5)]),
    (
        "GSL701",
        "FROM python:3.12\nCOPY torch.whl /tmp/\nRUN pip install --no-cache-dir "
        "/tmp/torch.whl\nRUN rm -f /tmp/torch.whl\n",
        {"torch.whl": b"PK"},
        [(4, 11)],
    ),
    (
        "GSL702",
        "FROM python:3.12\nRUN wget -q https://example.com/pkg-1.0-py3-none-any.whl "
        "&& pip install --no-cache-dir pkg-1.0-py3-none-any.whl\n",
        {},
        [(2, 13)],
    ),
    (
        "GSL005",
        "FROM python:3.12\nRUN if [ -f /tmp/x.txt ]; then pip install -r /tmp/x.txt fi\n",
        {},
        [(2, 5)],
    ),
    (
        "GSL907",
        "FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y --allow-unauthenticated "
        "curl=7.81.0-1ubuntu1.20\n",
        {},
        [(2, 42)],
    ),
    (
        "GSL908",
        "FROM ubuntu:22.04\nRUN curl -fsSL http://repo.example.com/key.gpg | apt-key add -\n",
        {},
        [(2, 16)],
    ),
    ("GSL909", "FROM ubuntu:22.04\nRUN ssh-keygen -A\n", {}, [(2, 5)]),
    (
        "GSL703",
        "FROM python:3.12\nCOPY . /app\nRUN chown -R 10001 /app\n",
        {"serve.py": ""},
        [(3, 20)],
    ),
    (
        "GSL905",
        "FROM python:3.12\nCOPY deploy.pem /root/.ssh/id_rsa\n",
        {"deploy.pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==\n"},
        [(2, 6)],
    ),
    (
        "GSL906",
        "FROM python:3.12\nRUN useradd app && echo 'app ALL=(ALL) NOPASSWD:ALL' "
        ">> /etc/sudoers\nUSER app\n",
        {},
        [(2, 25)],
    ),
    (
        "GSL901",
        "FROM python:3.12\nARG HF_TOKEN\nENV WANDB_API_KEY=${HF_TOKEN}\n",
        {},
        [(2, 5), (3, 5)],
    ),
    (
        "GSL902",
        "FROM python:3.12\nRUN curl -LsSf https://astral.sh/uv/install.sh | sh\n",
        {},
        [(2, 50)],
    ),
    ("GSL903", "FROM python:3.12\nUSER root\n", {}, [(2, 6)]),
    ("GSL002", "FROM python:3.12\nCOPY missing.txt /x\n", {}, [(2, 6)]),
    (
        "GSL003",
        "FROM python:3.12\nARG A=0123456789abcdef\n" + "ARG A=$A$A\n" * 20,
        {},
        [(16, 5)],  # 16 bytes doubled: 128 KiB exactly on line 15, past it on line 16
    ),
    (
        "GSL003",
        "FROM python:3.12\nCOPY install.sh /\nRUN /install.sh\n",
        {"install.sh": "echo x\n" * 5_000},  # 5,000 commands + the RUN's own: past the limit
        [(3, 1)],
    ),
    (
        "GSL003",
        "FROM python:3.12\nCOPY install.sh /\nRUN /install.sh\n",
        {"install.sh": "echo x\n" * 40_000},  # 320,000 bytes > 256 KiB
        [(1, 1)],
    ),
    (
        "GSL004",
        "FROM python:3.12\nCOPY . /app\n",
        {".dockerignore": "*.pyc\n[z-a]\n!\n", "app.py": "print()\n"},
        [(2, 1), (3, 1)],
    ),
    (
        "GSL002",
        "FROM python:3.12\nCOPY secret.env /x\n",
        {"secret.env": "x", ".dockerignore": "*.env\n"},
        [(2, 6)],
    ),
    (
        "GSL306",
        "FROM python:3.12\nCOPY poetry.lock pyproject.toml /app/\nWORKDIR /app\n"
        "RUN poetry install --no-root\n",
        {"poetry.lock": "", "pyproject.toml": ""},
        [(4, 5)],
    ),
    (
        "GSL508",
        "FROM nvidia/cuda:11.6.2-base-ubuntu20.04\nRUN pip install --no-cache-dir torch==1.12.1\n",
        {},
        [(2, 32)],
    ),
    (
        "GSL508",
        "FROM ubuntu:22.04\nRUN pip install --no-cache-dir torch==2.15.0\n",
        {},
        [(2, 32)],
    ),
    (
        "GSL509",
        "FROM nvidia/cuda:12.3.2-runtime-ubuntu22.04\nRUN apt-get install -y "
        "libnccl2=2.18.5-1+cuda11.8 cuda-nvrtc-12-1\n",
        {},
        [(2, 24), (2, 51)],
    ),
    ("GSL904", "FROM ubuntu:22.04\nRUN curl -sSk https://e.com/x | sha256sum\n", {}, [(2, 10)]),
    (
        "GSL904",
        "FROM python:3.12\nRUN pip install --no-cache-dir --trusted-host pypi.e.com x==1\n",
        {},
        [(2, 32)],
    ),
    (
        "GSL904",
        "FROM ubuntu:22.04\nRUN git -c http.sslVerify=false clone https://e.com/r\n",
        {},
        [(2, 12)],
    ),
    (
        "GSL904",
        "FROM ubuntu:22.04\nENV GIT_SSL_NO_VERIFY=1\nRUN git clone https://e.com/r\n",
        {},
        [(3, 5)],
    ),
    (
        "GSL101",
        "FROM python:3.12\nRUN --mount=from=ghcr.io/o/tools,source=/t,target=/t /t/run\n",
        {},
        [(2, 18)],
    ),
    (
        "GSL106",
        "FROM python:3.12\nARG REF=main\nRUN git clone --depth 1 -b ${REF} https://github.com/o/r\n",
        {},
        [(3, 35)],
    ),
    (
        "GSL506",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nCOPY ext /ext\n"
        "RUN pip install --no-cache-dir --no-build-isolation /ext\n",
        {"ext/setup.py": "from torch.utils.cpp_extension import CUDAExtension\n"},
        [(3, 53)],
    ),
    (
        "GSL601",
        "FROM python:3.12\nCOPY serve.py /app/\nRUN pip install --no-cache-dir x==1\n",
        {"serve.py": ""},
        [(3, 5)],
    ),
    (
        "GSL701",
        "FROM ubuntu:22.04\nRUN apt-get update\nRUN rm -rf /var/lib/apt/lists/*\n",
        {},
        [(3, 12)],
    ),
]

GOOD = [
    ("GSL101", "FROM python:3.12@sha256:" + "a" * 64 + "\n", {}),
    ("GSL101", "FROM scratch\n", {}),
    ("GSL102", "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS b\nFROM b\n", {}),
    ("GSL103", "FROM python:3.12@sha256:" + "b" * 64 + "\n", {}),
    ("GSL101", "FROM python:3.12 AS base\nFROM base\n", {}),
    ("GSL105", "FROM python:3.12\nRUN pip install --no-cache-dir --upgrade pip setuptools\n", {}),
    ("GSL105", "FROM python:3.12\nARG V\nRUN pip install --no-cache-dir torch==${V}\n", {}),
    (
        "GSL105",
        "FROM python:3.12\nCOPY . /app\nRUN pip install --no-cache-dir --no-deps /app\n",
        {"pyproject.toml": "[project]\nname = 'a'\ndependencies = ['torch>=2.1']\n"},
    ),
    (
        "GSL105",
        "FROM python:3.12\nCOPY c.txt /\nRUN pip install --no-cache-dir -c /c.txt numpy\n",
        {"c.txt": "numpy==1.26.4\n"},
    ),
    (
        "GSL105",
        "FROM python:3.12\nCOPY uv.lock pyproject.toml /app/\nRUN uv sync --frozen --no-cache\n",
        {"uv.lock": "", "pyproject.toml": ""},
    ),
    (
        "GSL106",
        "FROM python:3.12\nRUN pip install --no-cache-dir git+https://github.com/o/r@3f2c1a9e0b\n",
        {},
    ),
    ("GSL106", "FROM python:3.12\nRUN git clone --branch v1.2.3 https://github.com/o/r\n", {}),
    (
        "GSL106",
        "FROM python:3.12\nRUN git clone https://github.com/o/r && cd r && git checkout "
        "3f2c1a9e0b1c\n",
        {},
    ),
    ("GSL107", "FROM ubuntu:22.04\nRUN apt-get install -y curl=7.81.0-1ubuntu1.20 ./x.deb\n", {}),
    (
        "GSL202",
        'FROM python:3.12\nENV HF_HOME=/cache\nCMD ["python", "-c", '
        '"from transformers import AutoModel"]\n',
        {},
    ),
    ("GSL602", "FROM python:3.12\nRUN huggingface-cli download gpt2\nCOPY . /app\n", {}),
    (
        "GSL108",
        "FROM ubuntu:22.04\nRUN curl -fsSLo /t.tgz https://e.com/t.tgz && echo 'ab  "
        "/t.tgz' | sha256sum -c - && tar xzf /t.tgz\n",
        {},
    ),
    ("GSL108", "FROM ubuntu:22.04\nADD --checksum=sha256:ab https://e.com/t.tgz /tmp/\n", {}),
    ("GSL109", "FROM python:3.12\nRUN pip install --no-cache-dir 'numpy>=1.26' > /dev/null\n", {}),
    (
        "GSL201",
        "FROM python:3.12\nCOPY . /app\n",
        {"models/a.safetensors": 5 * 1024 * 1024, ".dockerignore": "models\n"},
    ),
    ("GSL201", "FROM python:3.12\nCOPY . /app\n", {"tiny.onnx": 100}),
    ("GSL301", "FROM python:3.12\nENV PIP_NO_CACHE_DIR=1\nRUN pip install torch==2.5.1\n", {}),
    (
        "GSL301",
        "FROM python:3.12\nRUN --mount=type=cache,target=/root/.cache/pip pip install "
        "torch==2.5.1\n",
        {},
    ),
    ("GSL301", "FROM python:3.12\nRUN pip install torch==2.5.1 && rm -rf /root/.cache/pip\n", {}),
    (
        "GSL301",
        "FROM python:3.12 AS build\nRUN pip install torch==2.5.1\n"
        "FROM python:3.12\nCOPY --from=build /usr/local/lib /usr/local/lib\n",
        {},
    ),
    ("GSL302", "FROM python:3.12\nENV UV_NO_CACHE=1\nRUN uv pip install --system x==1.0\n", {}),
    (
        "GSL302",
        "FROM python:3.12\nRUN --mount=type=cache,target=/root/.cache/uv uv sync --frozen\n",
        {"uv.lock": ""},
    ),
    (
        "GSL303",
        "FROM continuumio/miniconda3:24.7.1-0\nRUN conda install -y numpy=1.26.4 && "
        "conda clean -afy\n",
        {},
    ),
    (
        "GSL304",
        "FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y curl=7.81 && "
        "rm -rf /var/lib/apt/lists/*\n",
        {},
    ),
    (
        "GSL304",
        "FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y curl=7.81 && "
        "find /var/lib/apt/lists -mindepth 1 -delete\n",
        {},
    ),
    (
        "GSL304",
        "FROM ubuntu:22.04\nRUN --mount=type=cache,target=/var/lib/apt,sharing=locked "
        "apt-get update && apt-get install -y curl=7.81\n",
        {},
    ),
    ("GSL305", "FROM alpine:3.20\nRUN apk add --no-cache curl=8.9.1-r0\n", {}),
    (
        "GSL401",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build\nRUN make\n"
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nCOPY --from=build /out /out\n",
        {},
    ),
    (
        "GSL402",
        "FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y gcc=4:11 && make && "
        "apt-get purge -y gcc && rm -rf /var/lib/apt/lists/*\n",
        {},
    ),
    (
        "GSL501",
        "FROM ubuntu:22.04\nRUN pip install --no-cache-dir torch==2.6.0 --index-url "
        "https://download.pytorch.org/whl/cu126\n",
        {},
    ),
    (
        "GSL502",
        "FROM nvidia/cuda:12.6.3-base-ubuntu22.04\nRUN pip install --no-cache-dir "
        "torch==2.6.0 --index-url https://download.pytorch.org/whl/cu126\n",
        {},
    ),
    (
        "GSL503",
        "FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nRUN pip install --no-cache-dir "
        "torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124\n",
        {},
    ),
    ("GSL504", "FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nENV NVIDIA_DISABLE_REQUIRE=false\n", {}),
    (
        "GSL507",
        "FROM nvidia/cuda:12.4.1-base-ubuntu22.04\nENV NVIDIA_REQUIRE_CUDA="
        '"cuda>=12.4 brand=tesla,driver>=535,driver<536 brand=GeForce,driver>=550"\n',
        {},
    ),
    (
        "GSL505",
        "FROM nvidia/cuda:12.6.3-base-ubuntu22.04\nENV NVIDIA_REQUIRE_CUDA=cuda>=12.6\n",
        {},
    ),
    (
        "GSL506",
        'FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nENV TORCH_CUDA_ARCH_LIST="8.0;9.0"\n'
        "RUN pip install --no-cache-dir --no-build-isolation git+https://github.com/NVIDIA/apex\n",
        {},
    ),
    # flash-attn passes its own -gencode list (FLASH_ATTN_CUDA_ARCHS).
    (
        "GSL506",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n"
        "RUN pip install --no-cache-dir --no-build-isolation flash-attn==2.7.4.post1\n",
        {},
    ),
    # NGC PyTorch images set TORCH_CUDA_ARCH_LIST themselves.
    (
        "GSL506",
        "FROM nvcr.io/nvidia/pytorch:24.07-py3\n"
        "RUN pip install --no-cache-dir --no-build-isolation git+https://github.com/NVIDIA/apex\n",
        {},
    ),
    (
        "GSL506",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nRUN CMAKE_ARGS="
        '"-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=80;90" pip install llama-cpp-python\n',
        {},
    ),
    (
        "GSL510",
        "FROM ubuntu:22.04\nRUN pip install --no-cache-dir torch "
        "--index-url https://download.pytorch.org/whl/cu118\n",
        {},
    ),
    (
        "GSL510",
        "FROM ubuntu:22.04\nRUN pip install --no-cache-dir 'torch<2.7' "
        "--extra-index-url https://download.pytorch.org/whl/cu118\n",
        {},
    ),
    (
        "GSL511",
        "FROM pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime\nRUN pip install --no-cache-dir "
        "https://example.com/fa/flash_attn-2.7.4+cu12torch2.6cxx11abiFALSE-cp311-cp311-"
        "linux_x86_64.whl\n",
        {},
    ),
    (
        "GSL702",
        "FROM python:3.12\nRUN wget -q https://example.com/pkg-1.0-py3-none-any.whl "
        "&& pip install --no-cache-dir pkg-1.0-py3-none-any.whl && rm pkg-*.whl\n",
        {},
    ),
    (
        "GSL512",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "RUN apt-get install -y --no-install-recommends nvidia-container-toolkit "
        "cuda-compat-12-4\n",
        {},
    ),
    ("GSL703", "FROM python:3.12\nCOPY --chown=10001 . /app\n", {"serve.py": ""}),
    (
        "GSL005",
        "FROM python:3.12\nRUN if [ -f /tmp/x.txt ]; then pip install -r /tmp/x.txt; fi\n",
        {},
    ),
    (
        "GSL907",
        "FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y curl=7.81.0-1ubuntu1.20\n",
        {},
    ),
    (
        "GSL908",
        "FROM ubuntu:22.04\nRUN curl -fsSL https://repo.example.com/key.gpg "
        "| gpg --dearmor -o /usr/share/keyrings/example.gpg\n",
        {},
    ),
    (
        "GSL909",
        'FROM ubuntu:22.04\nENTRYPOINT ["/bin/sh", "-c", "ssh-keygen -A && exec sshd -D"]\n',
        {},
    ),
    (
        "GSL905",
        "FROM python:3.12\nCOPY id_ed25519.pub known_hosts /root/.ssh/\n",
        {"id_ed25519.pub": "ssh-ed25519 AAAA\n", "known_hosts": "github.com ssh-ed25519 A\n"},
    ),
    (
        "GSL906",
        "FROM python:3.12\nRUN echo 'app ALL=(root) NOPASSWD: /usr/bin/apt-get' "
        "> /etc/sudoers.d/app\n",
        {},
    ),
    (
        "GSL601",
        "FROM python:3.12\nCOPY requirements.txt /app/\nRUN pip install --no-cache-dir -r "
        "/app/requirements.txt\nCOPY . /app\nRUN pip install --no-cache-dir --no-deps -e /app\n",
        {"requirements.txt": "numpy==1.26.4\n"},
    ),
    (
        "GSL701",
        "FROM python:3.12\nRUN --mount=type=bind,source=t.whl,target=/tmp/t.whl pip "
        "install --no-cache-dir /tmp/t.whl\n",
        {"t.whl": b"PK"},
    ),
    ("GSL901", "FROM python:3.12\nENV TOKENIZERS_PARALLELISM=false HF_TOKEN_PATH=/run/t\n", {}),
    (
        "GSL902",
        "FROM python:3.12\nRUN curl -fsSLo /i.sh https://e.com/i.sh && sha256sum -c s "
        "&& sh /i.sh\n",
        {},
    ),
    ("GSL903", "FROM python:3.12\nUSER 10001\n", {}),
    ("GSL002", "FROM python:3.12\nCOPY --from=builder /x /x\n", {}),
    ("GSL002", 'FROM python:3.12\nARG D=app\nCOPY "$D" /srv/\n', {"app/x.py": ""}),
    ("GSL105", "FROM python:3.12\nRUN pip install --no-cache-dir -e ./lib -e plugins\n", {}),
    (
        "GSL105",
        "FROM python:3.12\nRUN poetry install --no-cache -E cuda --with dev\n",
        {"poetry.lock": ""},
    ),
    (
        "GSL106",
        "FROM python:3.12\nRUN pip install --no-cache-dir git+https://e.com/o/r@v2.20.0\n",
        {},
    ),
    (
        "GSL106",
        "FROM python:3.12\nRUN git clone https://e.com/o/r /r && git -C /r checkout tags/v1.4.2\n",
        {},
    ),
    (
        "GSL106",
        "FROM python:3.12\nRUN git clone https://e.com/o/r /r && cd /r "
        "&& git reset --hard v0.3.0\n",
        {},
    ),
    ("GSL302", "FROM python:3.12\nRUN uv pip install --system --no-cache-dir x==1.0\n", {}),
    ("GSL306", "FROM python:3.12\nRUN poetry install --no-root --no-cache\n", {"poetry.lock": ""}),
    (
        "GSL306",
        "FROM python:3.12\nRUN poetry install --no-root && rm -rf /root/.cache/pypoetry\n",
        {"poetry.lock": ""},
    ),
    (
        "GSL501",
        "FROM ubuntu:22.04\nRUN pip install --no-cache-dir torch==2.10.0 --index-url "
        "https://download.pytorch.org/whl/cu129\n",
        {},
    ),
    (
        "GSL501",
        "FROM ubuntu:22.04\nRUN pip install --no-cache-dir torch==2.14.0 --index-url "
        "https://download.pytorch.org/whl/cu129\n",
        {},
    ),
    (
        "GSL506",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nCOPY . /src\nWORKDIR /src\n"
        "RUN python3 setup.py develop && pip install --no-cache-dir --no-build-isolation x==1\n",
        {"setup.py": "from setuptools import setup\nsetup(name='x')\n"},
    ),
    ("GSL508", "FROM ubuntu:22.04\nRUN pip install --no-cache-dir torch==1.12.1+cpu\n", {}),
    (
        "GSL508",
        "FROM ubuntu:22.04\nRUN pip install --no-cache-dir torch==2.7.0 --index-url "
        "https://download.pytorch.org/whl/cu126\n",
        {},
    ),
    (
        "GSL509",
        "FROM nvidia/cuda:12.2.2-runtime-ubuntu22.04\nRUN apt-get install -y "
        "libcudnn8=8.9.7.29-1+cuda12.2 libcudnn9-cuda-12 cuda-compat-12-6\n",
        {},
    ),
    (
        "GSL601",
        "FROM python:3.12\nCOPY fetch.py /opt/\n"
        "RUN pip install --no-cache-dir x==1 && python /opt/fetch.py\n",
        {"fetch.py": ""},
    ),
    (
        "GSL901",
        "FROM python:3.12\nENV SCCACHE_S3_NO_CREDENTIALS=0 HF_HUB_DISABLE_TOKEN=1\n"
        "ARG USE_AUTH_TOKEN\n",
        {},
    ),
    (
        "GSL904",
        "FROM ubuntu:22.04\nRUN curl -fsSLo /x https://e.com/x -K cfg && wget -q https://e.com/y\n",
        {},
    ),
    ("GSL003", "FROM python:3.12\nARG A=0123456789abcdef\n" + "ARG A=$A$A\n" * 13, {}),
    (
        "GSL003",
        "FROM python:3.12\nCOPY install.sh /\nRUN /install.sh\n",
        # 262,144 bytes (the size limit) in 4,096 commands + the RUN's own (under 5,000).
        {"install.sh": ("echo " + "x" * 58 + "\n") * 4_096},
    ),
    (
        "GSL004",
        "FROM python:3.12\nCOPY . /app\n",
        {".dockerignore": "*.pyc\n[a-z]*.tmp\n**/*a*a*a*a*a*a*a*a*a*a*b\n", "app.py": "x\n"},
    ),
]


@pytest.mark.parametrize(("rule", "dockerfile", "files", "expected"), BAD)
def test_rule_fires_at_token(
    lint: Linter,
    rule: str,
    dockerfile: str,
    files: dict[str, str | bytes | int],
    expected: list[tuple[int, int]],
) -> None:
    assert_found_at(lint, rule, dockerfile, files, expected)


@pytest.mark.parametrize(("rule", "dockerfile", "files"), GOOD)
def test_rule_silent_on_good_input(
    lint: Linter, rule: str, dockerfile: str, files: dict[str, str | bytes | int]
) -> None:
    findings = lint(dockerfile, files)
    assert positions(findings, rule) == [], [(f.rule, f.location, f.message) for f in findings]


def test_every_rule_has_a_bad_and_a_good_case() -> None:
    from gpuship.lint.rules import RULES

    untested = {r.id for r in RULES} - {case[0] for case in BAD}
    assert untested <= {"GSL001", "GSL104", "GSL801"}  # covered in test_engine.py
    assert {r.id for r in RULES} - {case[0] for case in GOOD} <= {"GSL001", "GSL104", "GSL801"}
