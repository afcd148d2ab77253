"""Issue #37: what real ML Dockerfiles hide behind indirection (ONBUILD triggers, scripts, package
manager verbs and files) and what lint misread there. Each case is shaped like a pattern seen in
public Dockerfiles, written here from scratch: the idiom that must stay silent, or the problem
that must be found, at its line and column."""

from __future__ import annotations

import pytest

from conftest import Linter, assert_found_at

# (id, rule, Dockerfile, context files, expected (line, column) of each finding of the rule)
CASES = [
    # A base image for per-model images: its ONBUILD triggers run in every image built FROM it.
    (
        "onbuild-trigger-downloads-the-model",
        "GSL202",
        "FROM python:3.11-slim\nWORKDIR /srv\nCOPY server.py /srv/\nONBUILD ARG MODEL_ID\n"
        "ONBUILD RUN huggingface-cli download ${MODEL_ID} --local-dir /srv/model\n"
        'CMD ["python", "/srv/server.py"]\n',
        {"server.py": ""},
        [(5, 13)],
    ),
    (
        "onbuild-trigger-keeps-the-pip-cache",
        "GSL301",
        "FROM python:3.11-slim AS quiet\nENV PIP_NO_CACHE_DIR=1\n"
        "ONBUILD RUN pip install transformers==4.46.3\n"
        "FROM python:3.11-slim\nENV PIP_DISABLE_PIP_VERSION_CHECK=1\n"
        "ONBUILD COPY requirements.txt /srv/\nONBUILD RUN pip install -r /srv/requirements.txt\n",
        {},
        [(7, 13)],
    ),
    (
        "onbuild-trigger-unpinned-in-a-builder-stage",
        "GSL105",
        "FROM python:3.11-slim AS model-base\nONBUILD RUN pip install --no-cache-dir vllm\n"
        "FROM python:3.11-slim\nRUN echo ready\n",
        {},
        [(2, 40)],
    ),
    (
        "onbuild-trigger-runs-a-copied-script",
        "GSL105",
        "FROM python:3.11-slim\nCOPY install-model-deps.sh /opt/\n"
        "ONBUILD RUN bash /opt/install-model-deps.sh\n",
        {"install-model-deps.sh": "set -e\npip install --no-cache-dir sentencepiece\n"},
        [(2, 28)],
    ),
    (
        "onbuild-trigger-leaves-the-apt-lists",
        "GSL304",
        "FROM ubuntu:24.04\nONBUILD RUN --mount=type=cache,target=/var/lib/apt "
        "apt-get update && apt-get install -y --no-install-recommends ffmpeg=7:6.1.1-3ubuntu5\n"
        "ONBUILD RUN apt-get update && apt-get install -y --no-install-recommends "
        "libsndfile1=1.2.2-1ubuntu5\n",
        {},
        [(3, 21)],
    ),
    # dnf's and microdnf's verbs, caches and order (dnf(8), dnf5, microdnf's dnf-main.c).
    (
        "dnf-in-alias-and-upgrade",
        "GSL305",
        "FROM registry.fedoraproject.org/fedora:41\nRUN dnf -y upgrade\n"
        "RUN dnf in -y python3.12-3.12.7 && dnf clean all\n",
        {},
        [(2, 5)],
    ),
    (
        "dnf5-cache-removed",
        "GSL305",
        "FROM registry.fedoraproject.org/fedora:41\nRUN dnf install -y git-2.47.0 "
        "&& rm -rf /var/cache/libdnf5\n",
        {},
        [],
    ),
    (
        "cache-removed-before-the-install",
        "GSL305",
        "FROM registry.fedoraproject.org/fedora:41\nRUN rm -rf /var/cache/libdnf5 "
        "&& dnf install -y git-2.47.0\n"
        "FROM alpine:3.20\nRUN rm -rf /var/cache/apk/* && apk add curl=8.11.1-r0\n",
        {},
        [(2, 34), (4, 32)],
    ),
    (
        "yum-cache-removed-after-dnf-and-microdnf",
        "GSL305",
        "FROM registry.access.redhat.com/ubi9/ubi-minimal:9.5 AS runtime\n"
        "RUN microdnf install -y python3.11-3.11.9 && rm -rf /var/cache/yum\n"
        "FROM rockylinux:9.3\nRUN dnf install -y gcc-11.4.1 && rm -rf /var/cache/yum/*\n",
        {},
        [(4, 5)],
    ),
    (
        "dnf-group-and-module-streams",
        "GSL107",
        "FROM rockylinux:9.3\nRUN dnf -y group install 'Development Tools' && dnf clean all\n"
        "RUN dnf module install -y nodejs:20/common && dnf clean all\n"
        "RUN dnf module install -y postgresql && dnf clean all\n"
        "RUN dnf -y upgrade openssl && dnf clean all\n",
        {},
        [(4, 27)],
    ),
    (
        "dnf-in-alias-unpinned",
        "GSL107",
        "FROM rockylinux:9.3\n"
        "RUN dnf in -y --setopt=install_weak_deps=False git && dnf clean all\n",
        {},
        [(2, 48)],
    ),
    # A constraints file gpuship cannot read may pin anything; pipx installs like pip.
    (
        "remote-constraints-file",
        "GSL105",
        "FROM python:3.11-slim\nRUN pip install --no-cache-dir transformers accelerate "
        "-c https://raw.githubusercontent.com/org/stack/v2.1.0/constraints.txt\n",
        {},
        [],
    ),
    (
        "pipx-installs-an-application",
        "GSL105",
        "FROM python:3.11-slim\nRUN pipx install --python python3.11 poetry==1.8.5\n"
        "RUN pipx install huggingface-hub\n",
        {},
        [(3, 18)],
    ),
    # pip disables its cache for every value strtobool accepts (pip's _handle_no_cache_dir).
    (
        "pip-no-cache-dir-any-value-but-empty",
        "GSL301",
        "FROM python:3.11-slim AS base\nENV PIP_NO_CACHE_DIR=0\nRUN pip install torch==2.5.1\n"
        "RUN PIP_NO_CACHE_DIR=off pip install numpy==2.1.3\n"
        'FROM python:3.11-slim\nENV PIP_NO_CACHE_DIR=""\nRUN pip install torch==2.5.1\n',
        {},
        [(7, 5)],
    ),
    # GSL601: installs after the source copy that a project, a make target or a later RUN hides.
    (
        "editable-install-after-the-source-copy",
        "GSL601",
        "FROM python:3.11-slim AS layered\nWORKDIR /app\nCOPY requirements.lock .\n"
        "RUN pip install --no-cache-dir -r requirements.lock\nCOPY . .\n"
        "RUN pip install --no-cache-dir --no-deps -e .\n"
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY . .\nRUN pip install --no-cache-dir -e .\n",
        {
            "pyproject.toml": "[project]\nname = 'embedder'\nversion = '0.3.0'\n"
            "dependencies = ['sentence-transformers==3.3.1', 'fastapi==0.115.6']\n",
            "requirements.lock": "sentence-transformers==3.3.1\nfastapi==0.115.6\n",
            "embedder/__init__.py": "",
        },
        [(10, 5)],
    ),
    (
        "extras-install-after-the-source-copy",
        "GSL601",
        "FROM python:3.11-slim\nWORKDIR /srv\nCOPY . .\n"
        'RUN uv pip install --system --no-cache ".[serve]"\n',
        {
            "pyproject.toml": "[project]\nname = 'svc'\nversion = '1.0.0'\ndependencies = []\n"
            "[project.optional-dependencies]\nserve = ['vllm==0.6.3']\n",
            "svc/__init__.py": "",
        },
        [(4, 5)],
    ),
    (
        "extras-dependencies-unpinned",
        "GSL105",
        "FROM python:3.11-slim\nWORKDIR /srv\nCOPY pyproject.toml .\n"
        'RUN pip install --no-cache-dir ".[serve]"\n',
        {
            "pyproject.toml": "[project]\nname = 'svc'\nversion = '1.0.0'\n"
            "dependencies = ['fastapi==0.115.6']\n[project.optional-dependencies]\n"
            "serve = ['vllm', 'transformers>=4.45']\ndev = ['pytest']\n"
            "all = ['svc[serve,dev]']\n",
        },
        [(6, 11), (6, 19)],
    ),
    (
        "heaviest-install-after-the-copy-is-not-the-first",
        "GSL601",
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY . .\nRUN apt-get update && apt-get install "
        "-y --no-install-recommends git=1:2.39.5-0+deb12u1 && rm -rf /var/lib/apt/lists/*\n"
        "RUN pip install --no-cache-dir -r requirements.txt\n",
        {"requirements.txt": "torch==2.5.1\n", "app.py": ""},
        [(5, 5)],
    ),
    (
        "make-target-installs-after-the-copy",
        "GSL601",
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY . .\nRUN make deps\n",
        {
            "Makefile": "PIP ?= pip\n\ndeps:\n"
            "\t$(PIP) install --no-cache-dir -r requirements.txt\n",
            "requirements.txt": "torch==2.5.1\n",
            "app.py": "",
        },
        [(4, 10)],
    ),
    # False warnings: a deletion of what the base image holds, a moved installer, compilers
    # that are no compilers or that the file keeps for compiling at run time.
    (
        "deletion-below-a-copied-file-is-the-base-image-s",
        "GSL701",
        "FROM python:3.11-slim AS build\n"
        "RUN pip wheel --no-cache-dir -w /wheels sentencepiece==0.2.0\n"
        "FROM python:3.11-slim\nCOPY . /app\nCOPY settings.yaml /etc/app\n"
        "COPY --from=build /wheels /wheels\n"
        "RUN rm -rf /etc/app/samples /app/tests /app/.pytest_cache /wheels/cache\n",
        {"settings.yaml": "", "app.py": "", "tests/test_app.py": ""},
        [(7, 29)],
    ),
    (
        "installer-moved-then-deleted",
        "GSL702",
        "FROM ubuntu:22.04\nRUN wget -q https://repo.anaconda.com/miniconda/"
        "Miniconda3-py311_24.7.1-0-Linux-x86_64.sh \\\n"
        "    && mv Miniconda3-py311_24.7.1-0-Linux-x86_64.sh /tmp/miniconda.sh \\\n"
        "    && bash /tmp/miniconda.sh -b -p /opt/conda && rm /tmp/miniconda.sh \\\n"
        "    && /opt/conda/bin/conda clean -afy\n"
        "RUN wget -q https://example.com/fa-2.7.4-cp311-cp311-linux_x86_64.whl \\\n"
        "    && mv fa-2.7.4-cp311-cp311-linux_x86_64.whl /tmp/wheels/ \\\n"
        "    && /opt/conda/bin/pip install --no-cache-dir "
        "/tmp/wheels/fa-2.7.4-cp311-cp311-linux_x86_64.whl\n",
        {},
        [(6, 13)],
    ),
    (
        "cuda-config-common-is-no-compiler",
        "GSL402",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y "
        "--no-install-recommends cuda-toolkit-12-4-config-common cuda-nvcc-12-4 "
        "&& rm -rf /var/lib/apt/lists/*\n",
        {},
        [(2, 98)],
    ),
    (
        "compilers-the-file-keeps-for-jit",
        "GSL402",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "# gcc and g++ stay: Triton JIT-compiles its launcher when a kernel first runs\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends gcc g++ "
        "&& rm -rf /var/lib/apt/lists/*\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends clang "
        "&& rm -rf /var/lib/apt/lists/*\n",
        {},
        [(4, 66)],
    ),
    (
        "jit-user-in-the-requirements-file",
        "GSL402",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN apt-get update && apt-get install -y "
        "--no-install-recommends gcc cmake python3-pip && rm -rf /var/lib/apt/lists/*\n"
        "COPY requirements.txt .\nRUN pip install --no-cache-dir -r requirements.txt\n",
        {"requirements.txt": "vllm==0.6.3\n"},
        [(2, 70)],
    ),
    # Weights and toolchains behind indirection: scripts run as programs, modules or from
    # another directory, urlretrieve, a make target, conda's metapackages and pkgs/ copied.
    (
        "download-scripts-run-three-ways",
        "GSL202",
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY tools/ tools/\n"
        "RUN chmod +x tools/fetch_sam.py && ./tools/fetch_sam.py\n"
        "RUN python -m tools.fetch_llm\nRUN cd tools && python fetch_clip.py --variant base\n",
        {
            "tools/__init__.py": "",
            "tools/fetch_sam.py": "#!/usr/bin/env python3\nfrom huggingface_hub import "
            "hf_hub_download\nhf_hub_download('facebook/sam', 'sam_vit_b.pth')\n",
            "tools/fetch_llm.py": "from huggingface_hub import snapshot_download\n"
            "snapshot_download('org/llm', local_dir='/models/llm')\n",
            "tools/fetch_clip.py": "import open_clip\n"
            "open_clip.create_model_and_transforms('ViT-B-32', pretrained='laion2b')\n",
        },
        [(4, 36), (5, 15), (6, 24)],
    ),
    (
        "urlretrieve-of-a-checkpoint",
        "GSL202",
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY fetch_assets.py fetch_vocab.py ./\n"
        "RUN python fetch_assets.py && python fetch_vocab.py\n",
        {
            "fetch_assets.py": "import urllib.request\nurllib.request.urlretrieve(\n"
            "    'https://dl.example.com/sam/sam_vit_h_4b8939.pth', '/models/sam.pth')\n",
            "fetch_vocab.py": "from urllib.request import urlretrieve\n"
            "urlretrieve('https://dl.example.com/bpe/vocab.json', 'vocab.json')\n",
        },
        [(4, 12)],
    ),
    (
        "make-target-runs-a-download-script",
        "GSL202",
        "FROM python:3.11-slim AS models\nWORKDIR /src\nCOPY Makefile download.py ./\n"
        "RUN pip install --no-cache-dir huggingface-hub==0.26.2 && make models\n"
        "FROM python:3.11-slim\nCOPY --from=models /src/models /models\n",
        {
            "Makefile": ".PHONY: models\nmodels:\n\tpython download.py\n",
            "download.py": "from huggingface_hub import snapshot_download\n"
            "snapshot_download('org/embedder', local_dir='models/embedder')\n",
        },
        [(4, 64)],
    ),
    (
        "conda-cuda-metapackage-brings-nvcc",
        "GSL402",
        "FROM continuumio/miniconda3:24.7.1-0\nRUN conda install -y -c nvidia "
        "cuda-runtime=12.4.1 cuda-libraries=12.4.1 && conda clean -afy\n"
        "RUN conda install -y -c nvidia cuda=12.4.1 && conda clean -afy\n",
        {},
        [(3, 32)],
    ),
    (
        "conda-pkgs-copied-into-the-final-stage",
        "GSL303",
        "FROM ubuntu:22.04 AS conda\nRUN wget -q https://repo.anaconda.com/miniconda/"
        "Miniconda3-py311_24.7.1-0-Linux-x86_64.sh -O /tmp/miniconda.sh \\\n"
        "    && bash /tmp/miniconda.sh -b -p /opt/conda && rm /tmp/miniconda.sh\n"
        "RUN /opt/conda/bin/conda install -y -c conda-forge numpy=2.1.3\n"
        "FROM conda AS cleaned\nRUN /opt/conda/bin/conda clean -afy\n"
        "FROM ubuntu:22.04\nCOPY --from=cleaned /opt/conda /opt/conda-clean\n"
        "COPY --from=conda /opt/conda /opt/conda\n",
        {},
        [(9, 19)],
    ),
    (
        "chown-stores-the-copied-tree-again",
        "GSL703",
        "FROM python:3.11-slim\nRUN useradd -u 10001 app\nCOPY --chown=10001 models.yaml /srv/\n"
        "COPY . /app\nRUN chown -R app:app /app && chmod -R g+w /usr/local/lib/python3.11\n"
        "USER 10001\n",
        {"serve.py": "", "models.yaml": ""},
        [(5, 22)],
    ),
    # Supply chain: signatures off, signing keys over plain HTTP, keys generated at build.
    (
        "package-signatures-turned-off",
        "GSL907",
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "RUN echo 'deb [trusted=yes] http://mirror.lab.local/cuda /' "
        "> /etc/apt/sources.list.d/lab-mirror.list\n"
        "RUN apt-get -o Acquire::AllowInsecureRepositories=true update \\\n"
        "    && apt-get install -y --no-install-recommends libnccl2=2.21.5-1+cuda12.4 "
        "&& rm -rf /var/lib/apt/lists/*\n"
        "FROM registry.access.redhat.com/ubi9/ubi-minimal:9.5\n"
        "RUN microdnf install -y --nogpgcheck python3.11-3.11.9 && microdnf clean all\n",
        {},
        [(2, 10), (3, 16), (6, 25)],
    ),
    (
        "signing-keys-over-plain-http",
        "GSL908",
        "FROM ubuntu:22.04\n"
        "RUN curl -fsSL http://developer.example.com/repo/key.asc | gpg --dearmor "
        "-o /usr/share/keyrings/vendor.gpg \\\n"
        "    && curl -fsSL https://download.example.com/linux/gpg | gpg --dearmor "
        "-o /usr/share/keyrings/other.gpg\n"
        "RUN apt-key adv --fetch-keys http://developer.example.com/repo/3bf863cc.pub\n",
        {},
        [(2, 16), (4, 30)],
    ),
    (
        "ssh-keys-generated-into-the-image",
        "GSL909",
        "FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y --no-install-recommends "
        "openssh-server=1:8.9p1-3ubuntu0.10 && rm -rf /var/lib/apt/lists/* && ssh-keygen -A\n"
        "RUN ssh-keygen -t ed25519 -N '' -f /tmp/deploy && cat /tmp/deploy.pub "
        "&& rm -f /tmp/deploy /tmp/deploy.pub\n"
        "RUN --mount=type=tmpfs,target=/scratch ssh-keygen -q -N '' -f /scratch/k\n"
        "RUN ssh-keygen -q -t ed25519 -N '' -C worker -f /root/.ssh/id_ed25519\n",
        {},
        [(2, 135), (5, 5)],
    ),
    # A RUN no shell parses: the `;` before `fi` lost when the lines were joined.
    (
        "run-missing-semicolon-before-fi",
        "GSL005",
        "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nARG WITH_FLASH_ATTN=0\n"
        'RUN if [ "$WITH_FLASH_ATTN" = 1 ]; then \\\n'
        "        pip install --no-cache-dir flash-attn==2.7.4.post1 --no-build-isolation; \\\n"
        "    fi\n"
        'RUN if [ "$(uname -m)" = x86_64 ]; then \\\n'
        "        pip install --no-cache-dir xformers==0.0.28.post3 \\\n"
        "    fi\n"
        'SHELL ["/usr/bin/pwsh", "-Command"]\nRUN if ($true) { Write-Output fi\n',
        {},
        [(6, 5)],
    ),
]


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


def test_a_trigger_runs_in_the_stage_s_last_workdir(lint: Linter) -> None:
    findings = lint(
        "FROM python:3.11-slim\nWORKDIR /srv\nONBUILD RUN wget -q https://example.com/"
        "kernels-0.4.1-cp311-cp311-linux_x86_64.whl && pip install --no-cache-dir "
        "kernels-0.4.1-cp311-cp311-linux_x86_64.whl\nWORKDIR /srv/app\n"
    )
    (hit,) = [f for f in findings if f.rule == "GSL702"]
    assert "downloads /srv/app/kernels-0.4.1-cp311-cp311-linux_x86_64.whl" in hit.message
