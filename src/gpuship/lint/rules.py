"""The lint stage's rule catalog: stable ids, names, categories, default severities and docs.

The checks that report these rules live in `lint/checks/`; like every stage, lint declares
`RULES` here and looks rules up with `gpuship.report.catalog`.

Ids are `GSL` + three digits; the first digit is the category group (0 metadata, 1 pinning,
2 weights, 3 cache, 4 toolchain, 5 cuda, 6 layer-order, 7 waste, 8 size, 9 security).
Ids never change meaning; a retired rule keeps its id unused. `hadolint` lists the DL codes
a rule corresponds to, so `# hadolint ignore=DL3008` also silences ours.
"""

from __future__ import annotations

from gpuship.report import Rule, Severity

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE
# How every rule reads shell branches: said in the limits of the rules they matter most to.
_BRANCHES = (
    " Shell `if`/`case` on build args is evaluated with the ARG defaults (and --build-arg "
    "values): a branch the build does not take is not checked, and a finding in a branch a "
    "--build-arg selects says so. A condition gpuship cannot decide (a file test, a command's "
    "exit status, an ARG without a value) keeps every branch it may take, and the finding says "
    "so."
)
# Where the CUDA rules find torch: the indirections a Dockerfile takes to install it.
_TORCH_FOUND = (
    "torch is found on RUN lines, in scripts a RUN runs (also through `conda run` in exec "
    "form), in the requirement files it installs from and in a conda environment file's "
    "`pip:` section (with its index lines), through ARG/ENV/shell variables and files read "
    "with `.`/`source`, and through what the shell computes from them: `${CUDA//./}`, "
    "`$(echo $CUDA | tr -d .)`, `cut`/`sed`/`awk` pipelines, `$(python -c ...)` string "
    "operations. A value the build computes otherwise (`$(nvcc --version ...)`, a file's "
    "content) is unknown, and what depends on it is not judged."
)
# The rules that read `ONBUILD RUN` triggers end their limits with this.
_TRIGGERS = (
    " An `ONBUILD RUN` is read as a RUN of every image built FROM its stage (a base for "
    "per-model images), with the ENV, WORKDIR and USER the stage leaves in its image; the "
    "scripts it runs are followed when the stage copies them before the ONBUILD line."
)

RULES: tuple[Rule, ...] = (
    Rule(
        id="GSL001",
        name="dockerfile-unparseable",
        category="metadata",
        severity=E,
        summary="The Dockerfile cannot be parsed the way BuildKit parses it.",
        rationale="A file BuildKit rejects (unterminated heredoc, unknown instruction, binary or "
        "non-UTF-8 content) fails the build; nothing else in it can be checked.",
        fix="Fix the syntax at the reported position.",
        bad_example="FROM python:3.12\nRUN <<EOF\npip install x\n",
        good_example="FROM python:3.12\nRUN <<EOF\npip install x==1.0\nEOF\n",
    ),
    Rule(
        id="GSL002",
        name="context-file-missing",
        category="metadata",
        severity=W,
        summary="A COPY/ADD source or an installed requirements file is not in the build context.",
        rationale="The build fails with 'not found', or the file is excluded by .dockerignore "
        "and silently missing from the image.",
        fix="Add the file, fix the path, or stop excluding it in .dockerignore.",
        bad_example="COPY requirements.txt /app/  # no such file in the context",
        limits="Sources are read from the context root as BuildKit reads them: `..` stops there "
        "(`COPY .. .` is the whole context). Files a script writes into the context before "
        "`docker build` (a downloaded model, a build-info file) cannot be told from missing "
        "ones.",
        good_example="COPY requirements.lock /app/",
    ),
    Rule(
        id="GSL003",
        name="lint-limit-reached",
        category="metadata",
        severity=W,
        summary="Part of the Dockerfile or its build context passes one of gpuship's limits, "
        "so it was not checked.",
        rationale="An ARG that doubles on each line reaches gigabytes in a few lines, a script "
        "of a hundred megabytes takes minutes to parse: lint stops at a limit (`limits:` in "
        "gpuship.yaml) and says what it left unchecked instead of exhausting the runner. An ARG "
        "or ENV value longer than Linux's MAX_ARG_STRLEN (128 KiB) also fails every RUN.",
        fix="Shorten the value or split the script; if it is genuine, raise the limit named in "
        "the message.",
        bad_example="ARG A=xxxxxxxx\nARG A=$A$A\nARG A=$A$A  # ... 30 more lines",
        good_example="ARG A=xxxxxxxx",
    ),
    Rule(
        id="GSL004",
        name="dockerignore-invalid-pattern",
        category="metadata",
        severity=E,
        summary="A `.dockerignore` line Docker refuses (an invalid range such as `[z-a]`, or "
        "a lone `!`).",
        rationale="moby/patternmatcher compiles each pattern to a Go regular expression; one it "
        "cannot compile fails every build of the context with 'syntax error in pattern'. gpuship "
        "reports the line and applies the others.",
        fix="Fix or remove the pattern (ranges go low to high: `[a-z]`).",
        bad_example="[z-a]*.tmp",
        good_example="[a-z]*.tmp",
    ),
    Rule(
        id="GSL005",
        name="run-shell-syntax-error",
        category="metadata",
        severity=E,
        summary="A RUN's shell script is a syntax error: no POSIX shell parses it.",
        rationale="`/bin/sh -c` refuses the script and the build fails at that RUN, however "
        "right each command in it is. The usual cause is a missing `;` before `fi`, `done` or "
        "`}` once the lines are joined: `then echo ok fi` makes `fi` an argument of `echo` and "
        "leaves the `if` open (hadolint reports these through ShellCheck's parse errors).",
        fix="Put a `;` (or a line break) before the closing word: `then echo ok; fi`.",
        limits="Judged: a compound command left open at the end of the script (`if`, `while`, "
        "`until`, `for`, `case`, `{`, `(`) and a closing word that closes nothing, in a "
        "shell-form RUN or ONBUILD RUN run by a POSIX shell (the default /bin/sh, or a SHELL "
        "of sh, bash, dash, ash, ksh or zsh). A script with what the check does not model is "
        "not judged rather than guessed: heredocs, backquotes, arithmetic, `[[ ]]`, arrays, "
        "functions, process substitution, `exit`, `;&`, or a command substitution holding "
        "quotes, comments, escapes or parentheses; scripts a RUN runs are not judged.",
        bad_example="RUN if [ -f /tmp/extra.txt ]; then pip install -r /tmp/extra.txt fi",
        good_example="RUN if [ -f /tmp/extra.txt ]; then pip install -r /tmp/extra.txt; fi",
    ),
    Rule(
        id="GSL101",
        name="base-image-untagged",
        category="pinning",
        severity=W,
        summary="Base image (or `COPY --from=` image) without a tag, or tagged `latest`.",
        rationale="`latest` changes under you: a rebuild silently moves CUDA, Python or the OS. "
        "ARG values are resolved first, so `FROM ${BASE}` is judged on its value. Images named "
        "by `COPY --from=` and `RUN --mount=from=` are checked the same way.",
        fix="Use a release tag (nvidia/cuda:12.4.1-runtime-ubuntu22.04), ideally with @sha256.",
        bad_example="FROM pytorch/pytorch",
        good_example="FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        hadolint=("DL3006", "DL3007"),
    ),
    Rule(
        id="GSL102",
        name="base-image-mutable-tag",
        category="pinning",
        severity=W,
        summary="Base image tag that moves by design (`main`, `nightly`, `latest-*`, `devel`...).",
        rationale="Branch-like tags are rebuilt continuously; two builds of the same commit get "
        "different images. hadolint only checks the literal `latest`.",
        fix="Pin a release tag or a digest.",
        bad_example="FROM ghcr.io/huggingface/text-generation-inference:latest-intel",
        good_example="FROM ghcr.io/huggingface/text-generation-inference:2.4.1",
    ),
    Rule(
        id="GSL103",
        name="base-image-no-digest",
        category="pinning",
        severity=N,
        summary="Base image not pinned by digest.",
        rationale="Tags can be re-pushed (CUDA images are rebuilt and EOL tags deleted); only a "
        "digest makes the base reproducible. Set `lint.require-digest: true` to make this a "
        "warning.",
        fix="Append @sha256:<digest> (keep the tag for readability).",
        bad_example="FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04",
        good_example="FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04@sha256:<digest>",
    ),
    Rule(
        id="GSL104",
        name="base-image-untrusted-registry",
        category="pinning",
        severity=E,
        summary="Base image from a registry outside `lint.trusted-registries`.",
        rationale="Only registries you trust should supply the bytes your GPU jobs run.",
        fix="Mirror the image into a trusted registry or add the registry to the list.",
        bad_example="FROM randomuser/cuda-torch:1.0",
        good_example="FROM nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04",
        hadolint=("DL3026",),
    ),
    Rule(
        id="GSL105",
        name="python-package-unpinned",
        category="pinning",
        severity=W,
        summary="pip/uv/conda/mamba/poetry installs a package without an exact version.",
        rationale="A range (`torch>=2`) or a bare name installs whatever is newest at build "
        "time; a new torch or numpy release breaks a rebuild of an unchanged commit. Checked "
        "in RUN, in requirement/constraint files, conda env files, the pyproject.toml of a "
        'local project installed (`pip install ".[serve]"` adds that extra\'s dependencies) '
        "and in scripts a RUN runs; "
        "hadolint skips `-r`, uv, conda and poetry.",
        fix="Pin with `==` (or a constraints/lock file: `-c constraints.txt`, `uv sync --frozen`).",
        limits="`pip install --dry-run` installs nothing and is not judged. A version that comes "
        "from a build ARG without a default or from a command substitution "
        "(`pytorch-cuda=$(...)`) is decided when the build runs: unknown, not unpinned. "
        "Installs run through `conda run`/`mamba run`/`micromamba run` and `python -m pip` are "
        "judged like pip itself. Upgrading the installer itself (`pip install -U pip`, "
        "`conda update conda`, `mamba update mamba`) is a bootstrap step, not judged; nor is "
        "`--no-index` with only local `--find-links` directories (a wheelhouse: its wheels are "
        "the pins; an ENV's `PIP_NO_INDEX`/`PIP_FIND_LINKS` are not read for this). "
        "`pipx install` is judged like pip (a `--spec` value is not read). A constraints file "
        "gpuship cannot read (`-c https://...`, a file the build writes) may pin any package: "
        "the versions of that install are unknown, not unpinned." + _TRIGGERS,
        bad_example="RUN pip install --no-cache-dir torch transformers>=4.40",
        good_example="RUN pip install --no-cache-dir torch==2.5.1 transformers==4.46.3",
        hadolint=("DL3013",),
    ),
    Rule(
        id="GSL106",
        name="vcs-source-unpinned",
        category="pinning",
        severity=W,
        summary="`git clone`, `pip install git+...` or `pip install -r <URL>` of a branch, "
        "without a commit or release tag.",
        rationale="A branch head changes with every push; the image is not reproducible and a "
        "compromised branch lands in it. A clone followed by `git checkout`/`git reset --hard` "
        "to a commit or release tag is pinned; `-b ${REF}` is judged on the ARG's default. A "
        "requirements file read from a branch URL (`-r https://raw.githubusercontent.com/org/"
        "repo/main/requirements.txt`) installs whatever that branch lists at build time.",
        fix="Install `git+https://...@<commit sha>`, or `git checkout <sha>` after cloning.",
        limits="A checkout, reset or fetch of a commit or tag in the same RUN or a later RUN of "
        'the stage pins the clone. A ref computed by the build (`git reset --hard "$(git tag '
        '| tail -1)"`) and a function\'s `git clone "$@"` are unknown and not reported. Refs '
        "are told apart by their shape: a sha, `v1.2`, `1.2.3` or `name_v1.2.3` is a tag; "
        "`main` or `release_v2.10` is a branch. A clone then checked out at a ref of "
        "another shape (`b3561`, a variable's value) is not on the default branch: a note says "
        "the ref is unknown to gpuship. Requirement URLs are judged on GitHub and "
        "GitLab raw-file URLs, whose ref sits at a known place in the path; other hosts are "
        "not." + _BRANCHES + _TRIGGERS,
        bad_example="RUN pip install git+https://github.com/org/repo",
        good_example="RUN pip install git+https://github.com/org/repo@3f2c1a9e",
    ),
    Rule(
        id="GSL107",
        name="os-package-unpinned",
        category="pinning",
        severity=N,
        summary="apt/dnf/yum/apk installs a package without a version.",
        rationale="Distribution archives drop old versions, so pins often do more harm than "
        "good; this is a note by default (raise it with `lint.severity`).",
        fix="Pin `pkg=version`, or build from a snapshot repository.",
        limits="Read from `apt-get`/`apt install`, `apk add`, and dnf/yum/microdnf `install`, "
        "`in`, `localinstall` and `module install`, where a module is pinned by its stream "
        '(`nodejs:20`, as hadolint reads it). A group (`dnf group install "Development '
        'Tools"`, `@core`) names no package and is not judged, nor are upgrades. A version '
        "held in a variable is decided at build time: not reported." + _TRIGGERS,
        bad_example="RUN apt-get install -y --no-install-recommends curl",
        good_example="RUN apt-get install -y --no-install-recommends curl=7.81.0-1ubuntu1.20",
        hadolint=("DL3008", "DL3018", "DL3033", "DL3041"),
    ),
    Rule(
        id="GSL108",
        name="download-without-checksum",
        category="pinning",
        severity=W,
        summary="curl/wget/ADD downloads a file that is never checked against a checksum.",
        rationale="What a URL serves can change or be tampered with; a checksum makes the build "
        "fail instead of shipping something else (hadolint#282, open since 2018).",
        fix='Verify with `echo "<sha256>  file" | sha256sum -c -`, or `ADD --checksum=sha256:`.',
        limits=_TRIGGERS[1:],
        bad_example="RUN curl -fsSLo /tmp/t.tgz https://example.com/t.tgz && tar xzf /tmp/t.tgz",
        good_example="ADD --checksum=sha256:<digest> https://example.com/tool.tgz /tmp/",
    ),
    Rule(
        id="GSL109",
        name="unquoted-version-specifier",
        category="pinning",
        severity=E,
        summary="An unquoted `pkg>=1.2` / `pkg<2` in a shell command is a redirect.",
        rationale="The shell reads `>=1.2` as 'write stdout to a file named =1.2': the package is "
        "installed unpinned and the build succeeds, silently.",
        fix="Quote the requirement: `pip install 'pkg>=1.2'`.",
        limits=_TRIGGERS[1:],
        bad_example="RUN pip install numpy>=1.26",
        good_example="RUN pip install 'numpy==1.26.4'",
    ),
    Rule(
        id="GSL201",
        name="weights-copied-into-image",
        category="weights",
        severity=W,
        summary="Model weights are copied into the image (explicitly or by a `COPY .`).",
        rationale="Weights make every image gigabytes larger, every pull slower, and tie a model "
        "version to a code version; a code edit re-sends them to the builder. A `COPY --from` "
        "of what an earlier stage downloaded (into `--local-dir`, the Hugging Face cache, a "
        "wget/curl output, ollama's store) ships the model just the same.",
        fix="Mount weights as a volume, fetch them at start into a cache, or ship them as a "
        "separate artifact; exclude them in .dockerignore.",
        bad_example="COPY models/llama-3-8b.safetensors /models/",
        good_example="# weights are mounted at /models at run time\nVOLUME /models",
        limits="Where a download lands is read from its command (`--local-dir`, `local_dir=` in "
        "the script, `-O`, the clone directory) or is the Hugging Face cache under HF_HOME; a "
        "download whose place is decided at build time is matched only by the copied path's "
        "name (`models`, `weights`, a weight file suffix).",
    ),
    Rule(
        id="GSL202",
        name="weights-downloaded-at-build",
        category="weights",
        severity=W,
        summary="A RUN downloads model weights (hf download, snapshot_download, from_pretrained, "
        "torch.hub, git lfs, ollama pull, wget of a weight file).",
        rationale="The download lands in a layer: the image grows by the model's size and any "
        "change to an earlier layer downloads it again. Python scripts the RUN runs and the "
        "recipes of a `make TARGET` (read from the context's Makefile) are looked into.",
        fix="Download at container start into a mounted cache (HF_HOME on a volume), or publish "
        "the weights as their own artifact.",
        bad_example="RUN huggingface-cli download meta-llama/Llama-3.1-8B",
        good_example='ENV HF_HOME=/cache/hf\nCMD ["python", "serve.py"]  # fetches on start',
        limits="Makefile recipes are read with simple variables substituted; pattern rules, make "
        "functions, conditionals and includes are not evaluated, so a download hidden behind "
        "them is not seen. A Python script is read when run as `python x.py`, `python -m "
        "pkg.mod` (pkg/mod.py or its __main__.py) or `./x.py`, from the directory the RUN's "
        "`cd`s lead to (from a shell script the RUN runs, from the WORKDIR; from a recipe, the "
        "Makefile's directory); `urlretrieve` counts when it fetches a weight file (a weight "
        "suffix, a Hub `/resolve/` URL)." + _TRIGGERS,
    ),
    Rule(
        id="GSL301",
        name="pip-cache-left",
        category="cache",
        severity=W,
        summary="pip keeps its download/wheel cache in the image layer.",
        rationale="For ML stacks the pip cache holds a second copy of torch and CUDA wheels "
        "(several GB).",
        fix="Use `--no-cache-dir`, `ENV PIP_NO_CACHE_DIR=1`, or "
        "`RUN --mount=type=cache,target=/root/.cache/pip`.",
        limits="The cache is where pip puts it: PIP_CACHE_DIR, XDG_CACHE_HOME or $HOME/.cache "
        "(an `ENV HOME` moves it). Options before the subcommand (`pip --no-cache-dir install`) "
        "and an earlier `pip config set global.no-cache-dir true` in the stage chain count. A "
        "removal in another script of the same RUN counts whatever its order, since the order "
        "of two scripts is not known. PIP_NO_CACHE_DIR set to any value pip accepts turns the "
        "cache off, `0`, `false`, `no` and `off` included (pip keeps that for backwards "
        "compatibility: `_handle_no_cache_dir`); an empty value does not." + _TRIGGERS,
        bad_example="RUN pip install torch==2.5.1",
        good_example="RUN pip install --no-cache-dir torch==2.5.1",
        hadolint=("DL3042",),
    ),
    Rule(
        id="GSL302",
        name="uv-cache-left",
        category="cache",
        severity=W,
        summary="uv keeps its cache in the image layer.",
        rationale="uv caches every wheel it installs; for torch that is gigabytes left behind. "
        "hadolint does not see uv.",
        fix="Use `--no-cache`, `ENV UV_NO_CACHE=1`, or "
        "`RUN --mount=type=cache,target=/root/.cache/uv`.",
        limits=_TRIGGERS[1:],
        bad_example="RUN uv pip install --system torch==2.5.1",
        good_example="RUN --mount=type=cache,target=/root/.cache/uv \\\n"
        "    uv pip install --system torch==2.5.1",
    ),
    Rule(
        id="GSL303",
        name="conda-cache-left",
        category="cache",
        severity=W,
        summary="conda/mamba/micromamba (or a Miniconda/Miniforge installer) leave package "
        "tarballs in `pkgs/`.",
        rationale="The package cache duplicates everything installed (cudatoolkit alone is GBs). "
        "The Miniconda, Miniforge, Mambaforge and Anaconda installers also unpack every package "
        "into PREFIX/pkgs and keep it there.",
        fix="End the RUN with `conda clean -afy` (or `micromamba clean --all --yes`), or mount "
        "a cache on the pkgs directory.",
        limits="A `COPY --from=STAGE DIR` into the final image that takes a conda pkgs/ "
        "directory STAGE (or a stage it is built FROM) filled and did not clean is reported at "
        "the COPY: the prefix is an installer's `-p` (else its default under $HOME), an "
        "install's `-p`/`--prefix`, else the root conda of the installer or of the conda "
        "images (continuumio, condaforge, mambaorg/micromamba: /opt/conda); elsewhere it is "
        "unknown and not reported." + _TRIGGERS,
        bad_example="RUN conda install -y pytorch=2.5.1",
        good_example="RUN conda install -y pytorch=2.5.1 && conda clean -afy",
    ),
    Rule(
        id="GSL304",
        name="apt-lists-left",
        category="cache",
        severity=W,
        summary="`apt-get update` lists stay in the final image.",
        rationale="The lists are tens of MB and stale by the next day. Every equivalent cleanup "
        "is accepted (`rm -rf /var/lib/apt/lists/*`, `find /var/lib/apt/lists -delete`, a "
        "cache/tmpfs mount); only stages in the final image are checked.",
        fix="Add `&& rm -rf /var/lib/apt/lists/*` to the same RUN.",
        limits=_TRIGGERS[1:],
        bad_example="RUN apt-get update && apt-get install -y curl",
        good_example="RUN apt-get update && apt-get install -y curl && rm -rf /var/lib/apt/lists/*",
        hadolint=("DL3009",),
    ),
    Rule(
        id="GSL305",
        name="os-package-cache-left",
        category="cache",
        severity=W,
        summary="dnf/yum/apk package caches stay in the final image.",
        rationale="The package manager's cache is pure waste in a runtime image. Any dnf, yum or "
        "microdnf command that downloads packages leaves it: `install`/`in`, `upgrade`/`up`, "
        "`reinstall`, `distro-sync`, `downgrade`, `swap`, group and module installs.",
        fix="`apk add --no-cache`, or end the RUN with `dnf clean all` / `yum clean all` / "
        "`microdnf clean all`.",
        limits="A clean or a removal of the cache counts after the install only, in the same RUN "
        "(`rm -rf /var/cache/apk/* && apk add` removes nothing the install leaves). The cache "
        "is where the manager keeps it: dnf 4 in /var/cache/dnf, dnf 5 (Fedora 41's `dnf`) in "
        "/var/cache/libdnf5, microdnf in /var/cache/yum (or libdnf5's from Fedora 38), yum 3 "
        "in /var/cache/yum; which one a command is depends on the distribution, so a removal "
        "of any it may use counts, and a clean by any of dnf, yum and microdnf. A removal of "
        "/var/cache/yum after `dnf install` removes nothing dnf keeps (hadolint accepts any "
        "`rm -rf`)." + _TRIGGERS,
        bad_example="RUN dnf install -y gcc",
        good_example="RUN dnf install -y gcc && dnf clean all",
        hadolint=("DL3019", "DL3032", "DL3040"),
    ),
    Rule(
        id="GSL306",
        name="poetry-cache-left",
        category="cache",
        severity=W,
        summary="poetry keeps its download cache in the image layer.",
        rationale="`poetry install` caches every wheel and sdist it fetches under "
        "~/.cache/pypoetry (POETRY_CACHE_DIR); for torch that is gigabytes in the layer. "
        "hadolint does not see poetry.",
        fix="Use `poetry install --no-cache`, mount a cache on the cache directory, or remove it "
        "in the same RUN.",
        limits="`poetry install --only-root` (the project itself, after its dependencies) "
        "downloads nothing and is not reported." + _TRIGGERS,
        bad_example="RUN poetry install --no-root",
        good_example="RUN poetry install --no-root --no-cache",
    ),
    Rule(
        id="GSL401",
        name="devel-base-in-final-image",
        category="toolchain",
        severity=W,
        summary="The final image is built on a CUDA `devel` image.",
        rationale="`devel` adds nvcc, headers and static libraries: GBs more than `runtime`, "
        "which is what inference and training need at run time.",
        fix="Compile in a `devel` builder stage and copy the results into a `-runtime` (or "
        "`-cudnn-runtime`) stage. If the image JIT-compiles kernels at run time (Triton, "
        "flashinfer, DeepSpeed ops), keep it and suppress with the reason.",
        bad_example='FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\nCMD ["python", "serve.py"]',
        good_example="FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build\n...\n"
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nCOPY --from=build /wheels /wheels",
    ),
    Rule(
        id="GSL402",
        name="compiler-in-final-image",
        category="toolchain",
        severity=W,
        summary="A compiler toolchain (build-essential, gcc, cmake, ninja, nvcc...) is installed "
        "in the final image.",
        rationale="Toolchains are only needed to build; in the shipped image they cost hundreds "
        "of MB and attack surface.",
        fix="Build in a separate stage and copy the artefacts; or purge the toolchain in the "
        "same RUN; list JIT needs in `lint.allowed-toolchains`.",
        limits="`make` alone compiles nothing and is reported only beside a compiler; tools "
        "named after a compiler (`clang-format`, `clang-tidy`, `gcc-doc`) are not compilers. "
        "NVIDIA's `cuda-toolkit-*-config-common` packages hold the library path, no compiler. "
        "conda's `cuda` metapackage (cuda-runtime with cuda-toolkit), `cuda-toolkit`, "
        "`cuda-nvcc`, `cuda-compiler` and `cudatoolkit-dev` bring nvcc, its `compilers`, "
        "`cxx-compiler`, `gcc` and `gxx` a C/C++ compiler; `cuda-runtime` and "
        "`cuda-libraries` none. "
        "In a final image that installs a package compiling at run time (triton, vllm, sglang, "
        "flashinfer, deepspeed, torch-tensorrt, apex on the pip/uv/conda command line, or in "
        "the requirement files or pyproject.toml it installs), the C/C++ compiler (gcc, g++, "
        "clang, build-essential) is kept and not reported: Triton builds its launcher with "
        "it; cmake, ninja and nvcc still are. When the comment lines right above a RUN say "
        "its toolchain is for compiling at run time (they name JIT, Triton, flashinfer or "
        "DeepSpeed, or compiling at run time), nothing that RUN installs is reported. When the "
        "final image's environment sets one of Triton's tool paths (TRITON_PTXAS_PATH, "
        "TRITON_PTXAS_BLACKWELL_PATH, TRITON_CUOBJDUMP_PATH, TRITON_NVDISASM_PATH), the CUDA "
        "compiler packages (cuda-nvcc, cuda-compiler, cuda-minimal-build, cuda-toolkit) are "
        "kept and not reported: Triton runs those tools when it compiles a kernel." + _TRIGGERS,
        bad_example="RUN apt-get install -y build-essential cmake",
        good_example="FROM base AS build\nRUN apt-get install -y build-essential\n...\n"
        "FROM base\nCOPY --from=build /out /opt/app",
    ),
    Rule(
        id="GSL501",
        name="torch-cuda-variant-unpublished",
        category="cuda",
        severity=E,
        summary="The torch version is known not to be published for the CUDA variant its index "
        "URL names.",
        rationale="`torch==2.6.0` with `--index-url .../whl/cu121` fails to resolve (2.6 has no "
        "cu121 build). pip reads every index it is given (`--index-url`, each "
        "`--extra-index-url`, the requirements file's, the space-separated PIP_EXTRA_INDEX_URL) "
        "and takes the build of one that has the release, so this is an error only when no "
        "index read has it; when the variant indexes are extra ones beside PyPI, pip silently "
        "installs PyPI's build instead, and the finding is a warning. Indexes that could each "
        "supply the release with different CUDA leave the variant unknown: nothing is claimed "
        "(here, nor by GSL502/GSL503). Reported only for releases whose variant list in "
        "gpuship's knowledge base is complete; elsewhere a variant gpuship does not list is "
        "unknown to it (GSL508), never called missing.",
        fix="Use a CUDA variant that torch release publishes (see `gpuship kb torch VERSION`).",
        limits=_TORCH_FOUND + _BRANCHES,
        bad_example="RUN pip install torch==2.6.0 \\\n"
        "    --index-url https://download.pytorch.org/whl/cu121",
        good_example="RUN pip install torch==2.6.0 \\\n"
        "    --index-url https://download.pytorch.org/whl/cu126",
    ),
    Rule(
        id="GSL502",
        name="torch-cuda-differs-from-base",
        category="cuda",
        severity=W,
        summary="torch's bundled CUDA differs from the base image's CUDA.",
        rationale="CUDA wheels bundle their own runtime: the image carries two CUDA runtimes, and "
        "the driver it really needs is the higher one, while NVIDIA_REQUIRE_CUDA states the "
        "base's. Without an index URL torch is PyPI's default variant of its release (torch 2.7 "
        "from PyPI is cu126). Two ARGs that disagree (CUDA_VERSION vs the torch index) are the "
        "usual cause.",
        limits=_TORCH_FOUND + _BRANCHES,
        fix="Use the torch variant of the base's CUDA, or a base of torch's CUDA (or a plain "
        "OS/`-base` image, since the wheel brings its own runtime).",
        bad_example="FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "RUN pip install torch==2.7.0  # PyPI's 2.7.0 is cu126",
        good_example="FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\nRUN pip install torch==2.7.0",
    ),
    Rule(
        id="GSL503",
        name="cuda-libraries-twice",
        category="cuda",
        severity=N,
        summary="CUDA libraries come both from a CUDA runtime base and from pip wheels.",
        rationale="A `-runtime`/`-devel` base already holds cuBLAS, cuFFT, NCCL... (and cuDNN in "
        "`-cudnn-` tags); CUDA torch wheels and `nvidia-*` wheels install them again. The "
        "finding states the size of the duplicated wheels (from the knowledge base) and is a "
        "warning when they reach 1 GB; a note when the size is small or unknown.",
        fix="Use a `-base` flavour or a plain OS image when the wheels bring CUDA.",
        bad_example="FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04\n"
        "RUN pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124",
        good_example="FROM nvidia/cuda:12.4.1-base-ubuntu22.04\n"
        "RUN pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124",
    ),
    Rule(
        id="GSL504",
        name="nvidia-require-disabled",
        category="cuda",
        severity=W,
        summary="`NVIDIA_DISABLE_REQUIRE` turns off the driver check.",
        rationale="The container starts on a host whose driver is too old and fails later with "
        "'CUDA driver version is insufficient' in the middle of a job.",
        fix="Remove it; let the runtime refuse incompatible hosts, or use forward compatibility.",
        bad_example="ENV NVIDIA_DISABLE_REQUIRE=1",
        good_example="# (no override)",
    ),
    Rule(
        id="GSL505",
        name="nvidia-require-weakened",
        category="cuda",
        severity=W,
        summary="`NVIDIA_REQUIRE_CUDA` is set lower than the CUDA the image contains.",
        rationale="The runtime admits hosts whose driver cannot run the image's CUDA.",
        fix="Drop the override or state the real need (`cuda>=` the highest CUDA in the image).",
        bad_example="FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04\n"
        "ENV NVIDIA_REQUIRE_CUDA=cuda>=11.0",
        good_example="FROM nvidia/cuda:12.6.3-runtime-ubuntu22.04",
    ),
    Rule(
        id="GSL506",
        name="cuda-arch-list-missing",
        category="cuda",
        severity=W,
        summary="CUDA extensions are compiled without `TORCH_CUDA_ARCH_LIST` (or nvcc without "
        "-arch/-gencode).",
        rationale="Without it torch's cpp_extension compiles for the GPUs it finds on the build "
        "machine, and ggml's CMake defaults to `native` the same way: the image fails with 'no "
        "kernel image is available' on GPUs of another generation. On a builder with no GPU "
        "cpp_extension finds none and the build itself fails (pytorch/pytorch#137261). A "
        "setup.py that chooses its own targets (sets TORCH_CUDA_ARCH_LIST, passes `-gencode` "
        "or `arch=compute_` flags) is not reported.",
        fix='Set `ENV TORCH_CUDA_ARCH_LIST="8.0;8.6;9.0+PTX"` (your fleet\'s GPUs) before '
        "the build; for llama-cpp-python add `-DCMAKE_CUDA_ARCHITECTURES=...` (or "
        "`-DGGML_NATIVE=OFF`) to CMAKE_ARGS.",
        bad_example="FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n"
        'RUN CMAKE_ARGS="-DGGML_CUDA=on" pip install llama-cpp-python',
        good_example="FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n"
        'ENV TORCH_CUDA_ARCH_LIST="8.0;9.0"\n'
        "RUN pip install --no-build-isolation git+https://github.com/NVIDIA/apex@25.08",
        limits="Judged on nvidia/cuda and pytorch/pytorch bases, whose environment sets no "
        "arch list. NGC PyTorch images have set TORCH_CUDA_ARCH_LIST themselves (21.12, "
        "23.10), and what any other base sets is unknown to gpuship, so nothing is said there. "
        "Builds that pass their own -gencode flags are not reported: flash-attn "
        "(FLASH_ATTN_CUDA_ARCHS), mamba-ssm, "
        "causal-conv1d, Transformer Engine (NVTE_CUDA_ARCHS); nor installs that compile "
        "nothing: prebuilt `.whl` files, and xformers, auto-gptq or deepspeed installed by name "
        "(wheels, or kernels compiled at run time). llama-cpp-python is judged only when "
        "unpinned (its newest release): which ggml an older pinned release vendors, and whether "
        "that one defaulted to `native`, is unknown to gpuship; a plain `cmake -DGGML_CUDA=ON` "
        "of a checkout is not judged for the same reason.",
    ),
    Rule(
        id="GSL507",
        name="nvidia-require-invalid",
        category="cuda",
        severity=E,
        summary="An `NVIDIA_REQUIRE_*` variable holds an expression nvidia-container-cli rejects.",
        rationale="On hosts where the NVIDIA runtime enforces requirements (legacy mode), every "
        "container of the image fails to start with 'invalid expression'; where it does not "
        "(CDI mode), the intended driver check silently never happens.",
        fix="Write `key op version` factors: keys cuda, driver, arch, brand; operators "
        "= == != < <= > >=; comma for AND, space for OR.",
        limits="The value is judged after ARG expansion, as the image gets it "
        "(`cuda>=${CUDA_MAJOR}.0` with `ARG CUDA_MAJOR=12` is `cuda>=12.0`); one that waits on "
        "a --build-arg is unknown until the build and is not reported.",
        bad_example='ENV NVIDIA_REQUIRE_CUDA="cuda>=12.4 driver=>535"',
        good_example='ENV NVIDIA_REQUIRE_CUDA="cuda>=12.4 brand=tesla,driver>=535,driver<536"',
    ),
    Rule(
        id="GSL508",
        name="torch-cuda-unknown",
        category="cuda",
        severity=N,
        summary="gpuship cannot check torch's CUDA: the release or variant is unknown to gpuship.",
        rationale="The CUDA checks rest on the knowledge base of torch releases and their wheel "
        "variants. A release it does not hold, a variant it does not list for an open release "
        "(one whose full variant list is not known), or a release whose PyPI default is not "
        "recorded is a gap in gpuship's knowledge, not a problem in the image: it is said as "
        "such, and the checks that need it are skipped.",
        fix="Nothing is wrong by itself; check the variant against "
        "https://download.pytorch.org/whl/<variant>, or name the index URL explicitly.",
        bad_example="RUN pip install torch==1.12.1 --index-url https://download.pytorch.org/whl/cu116",
        good_example="RUN pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124",
    ),
    Rule(
        id="GSL509",
        name="cuda-package-for-other-cuda",
        category="cuda",
        severity=W,
        summary="A CUDA-bound package (apt, conda or pip) is built for another CUDA than the base "
        "image's, or brings or needs another cuDNN major than the image's.",
        rationale="`libcudnn8=8.9.7.29-1+cuda11.8` on a CUDA 12 base, or `cuda-cudart-12-1` on "
        "12.4, puts libraries built for one CUDA next to another: a second toolkit version in "
        "the image, and for another major version libraries that do not load. Read from the "
        "`+cudaX.Y` suffix of the package version, compared by major (a library built for 12.2 "
        "runs on any CUDA 12 thanks to minor version compatibility: `+cuda12.2` is the only "
        "CUDA 12 build of cuDNN 8.9.7), and from `-X-Y` / `-cuda-X` package names, a toolkit "
        "minor itself. Python packages other than torch are compared with the base's CUDA by "
        "major: `cupy-cuda11x`, `nvidia-*-cu11` wheels, `tensorrt-cu12`, `jax[cuda12]` and "
        "`paddlepaddle-gpu==2.6.1.post120` by what their names say, `onnxruntime-gpu` and "
        "`tensorflow` releases by gpuship's knowledge base (the CUDA and cuDNN each PyPI "
        "release is built for). One that loads the system's CUDA cannot use the GPU on another "
        "major; one that brings its CUDA from pip (`jax[cuda12]`, `tensorflow[and-cuda]`, "
        "`nvidia-*` wheels) adds a second CUDA stack. "
        "Likewise cuDNN 8 from apt (`libcudnn8`), conda (`cudnn=8.9`) or pip "
        "(`nvidia-cudnn-cu11==8.*`, `tensorflow[and-cuda]` 2.17 or older) on a cuDNN 9 stack (a "
        "`cudnn9` base tag, or a torch whose PyPI wheel pins cuDNN 9: 2.4 and later, from "
        "gpuship's knowledge base) adds a second cuDNN that torch never loads, and a package "
        "that needs a cuDNN major the image lacks (onnxruntime-gpu 1.18 or older needs cuDNN 8) "
        "cannot load it.",
        fix="Install the package build for the base's CUDA and the image's cuDNN, or use a "
        "base of the CUDA the packages need (nvidia/cuda `-cudnn-` tags carry a matching "
        "cuDNN).",
        bad_example="FROM nvidia/cuda:12.3.2-runtime-ubuntu22.04\n"
        "RUN apt-get install -y libcudnn8=8.9.7.29-1+cuda11.8",
        good_example="FROM nvidia/cuda:12.3.2-cudnn9-runtime-ubuntu22.04",
        limits="A base tag that names no cuDNN major (nvidia/cuda `-cudnn-`) and torch from "
        "another index than PyPI's default leave the image's cuDNN major unknown. A cuDNN that "
        "a package of the image needs (onnxruntime-gpu 1.17 and `libcudnn8`) is reported on "
        "neither. Releases the knowledge base does not hold (onnxruntime-gpu 1.21, tensorflow "
        "2.19), a bare `tensorrt` or `cupy` (their names state no CUDA), onnxruntime-gpu and "
        "tensorflow installed from another index than PyPI, and conda's torch and toolkit "
        "packages are unknown and not judged; other software that needs cuDNN 8 beside torch "
        "is the user's call: suppress with the reason." + _BRANCHES,
    ),
    Rule(
        id="GSL510",
        name="torch-extra-index-passed-over",
        category="cuda",
        severity=W,
        summary="An unpinned torch with `--extra-index-url .../cuXXX` installs PyPI's newer "
        "build, not the CUDA variant the URL names.",
        rationale="pip merges an extra index with PyPI and takes the newest version of all. "
        "Once torch stops publishing a variant (cu118 ends with 2.7), PyPI always has a newer "
        "torch than that index: the image gets PyPI's default CUDA build, silently, and the "
        "driver it needs rises with it. Judged from gpuship's torch release lists; uv prefers "
        "its extra indexes and is judged only with `--index-strategy unsafe-best-match`.",
        fix="Pin torch to a release that has the variant (`torch==2.7.1`), or make the variant "
        "index the only one (`--index-url`).",
        bad_example="RUN pip install torch \\\n"
        "    --extra-index-url https://download.pytorch.org/whl/cu118",
        good_example="RUN pip install torch==2.7.1 \\\n"
        "    --index-url https://download.pytorch.org/whl/cu118",
        limits="Judged for the variants gpuship's knowledge base records torch retired "
        "(cu118 after 2.7, cu121 after 2.5, cu124 after 2.6); while a variant may still come "
        "in a later release, its index may hold the newest torch and nothing is said. An index "
        "URL assembled in the shell (`INDEX=.../cu$(echo $CUDA | tr -d .)`) is read as the "
        "build computes it. A pinned torch is judged by GSL501/GSL508 instead (with an extra "
        "index pip prefers the `+cuXXX` build of the same version)." + _BRANCHES,
    ),
    Rule(
        id="GSL511",
        name="wheel-built-for-other-stack",
        category="cuda",
        severity=W,
        summary="A prebuilt wheel (flash-attn, flashinfer, xformers...) is built for another "
        "torch, CUDA major or Python than the image installs.",
        rationale="Compiled extensions are built against one torch release, one CUDA major and "
        "one CPython, and their file names say which (`+cu12torch2.6...-cp311`, flashinfer's "
        "`/whl/cu124/torch2.4/` index). pip checks only the Python tag: a wheel for another "
        "torch or CUDA installs and then fails at import with an undefined symbol.",
        fix="Take the wheel built for the torch, CUDA and Python the image has (or pin torch to "
        "the one the wheel names).",
        bad_example="FROM pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime\n"
        "RUN pip install https://github.com/org/fa/releases/download/v2.7.4/"
        "flash_attn-2.7.4+cu12torch2.4cxx11abiFALSE-cp311-cp311-linux_x86_64.whl",
        good_example="FROM pytorch/pytorch:2.6.0-cuda12.4-cudnn9-runtime\n"
        "RUN pip install https://github.com/org/fa/releases/download/v2.7.4/"
        "flash_attn-2.7.4+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl",
        limits="The image's torch is a pinned torch of the same stage chain (one release, its "
        "CUDA from the index or the PyPI default gpuship records) or a pytorch/pytorch base "
        "tag; an unpinned torch installed with a range (`torch>=2.5`) is judged only where the "
        "range admits no release of the wheel's torch. xformers installed by version is "
        "judged on the torch gpuship's knowledge base records for it (0.0.23 to 0.0.33); a "
        "release it does not record is unknown. The image's Python is that of an official "
        "python:X.Y base, or the apt `python3` of an Ubuntu base (nvidia/cuda `-ubuntu22.04`, "
        "`ubuntu:24.04`; 3.10 and 3.12) that the stage chain installs, when no other "
        "interpreter is installed. Two different torches or any other base leave the fact "
        "unknown, and nothing is said. CUDA is compared by major version only (a cu124 build "
        "with torch's CUDA 12.1 may work); the C++ ABI flag (`cxx11abi`) is not judged."
        + _BRANCHES,
    ),
    Rule(
        id="GSL512",
        name="driver-libraries-installed",
        category="cuda",
        severity=E,
        summary="The NVIDIA driver's user-space libraries (libcuda, libnvidia-ml...) are "
        "installed into the image.",
        rationale="A GPU container gets these libraries from its host: the NVIDIA Container "
        "Toolkit injects the host driver's copies when the container starts, because they must "
        "match the host's kernel module exactly. An image that installs its own (apt "
        "`libnvidia-compute-550`, `nvidia-driver-550`, `nvidia-utils-550`, `cuda-drivers`, "
        "Debian's `libcuda1`, NVIDIA's RHEL `nvidia-driver-cuda-libs`, or the "
        "`NVIDIA-Linux-x86_64-*.run` installer, also with `--no-kernel-module`) is tied to that "
        "driver version: on a host with another driver two drivers' libraries sit side by side, "
        "`libcuda.so.1` may resolve to the image's, and CUDA fails with 'Failed to initialize "
        "NVML: Driver/library version mismatch' (CUDA error 803, 'system has unsupported display "
        "driver / cuda driver combination'), or the toolkit cannot mount over them and the "
        "container does not start ('file exists'). Which packages ship driver libraries is "
        "gpuship's sourced list (their file lists and dependencies), never guessed from a name: "
        "`nvidia-container-toolkit`, `libnvidia-container*`, the `cuda-compat-X-Y` package and "
        "the CUDA wheels on PyPI are not driver libraries.",
        fix="Remove the package (or the installer) and let the runtime inject the host's "
        "libraries (`docker run --gpus`, CDI). To link against libcuda at build time use the "
        "stub `/usr/local/cuda/lib64/stubs/libcuda.so`; to run a newer CUDA on an older driver "
        "branch install `cuda-compat-X-Y` (forward compatibility, data-center GPUs only).",
        bad_example="FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "RUN apt-get update && apt-get install -y --no-install-recommends \\\n"
        "      nvidia-utils-550 libnvidia-compute-550",
        good_example="FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "# nvidia-smi and libcuda come from the host at `docker run --gpus all`",
        limits="Read from apt/apt-get/aptitude and dnf/yum/microdnf installs (and `dnf module "
        "install nvidia-driver:...`) of the packages gpuship lists, with a branch held in a "
        "build ARG, in the image's stages and ONBUILD triggers; a package an apt or dnf "
        "`remove`/`purge` of a later command removes again is not reported. Not judged: "
        "zypper (SUSE's `nvidia-compute-G06`), `.deb`/`.rpm` files installed by path, "
        "a `cuda`/`cuda-X-Y`/`cuda-runtime-X-Y` metapackage of NVIDIA's repository, "
        "Debian/Ubuntu's `nvidia-cuda-toolkit` (it ships nvcc, but its nvidia-cuda-dev depends "
        "on `libcuda1 | ...` and so brings libcuda1 where nothing else provides it: what it "
        "brings depends on the image), the CUDA runfile (`cuda_*_linux.run`) without "
        "`--driver`, and installer scripts downloaded at build time (ollama's install.sh "
        "installs cuda-drivers). conda cannot install the driver and no pip wheel ships it. "
        "`gpuship inspect` (GSI506) finds the libraries in the built image whichever way they "
        "came." + _TRIGGERS,
    ),
    Rule(
        id="GSL601",
        name="dependencies-after-source-copy",
        category="layer-order",
        severity=W,
        summary="Dependencies are installed after the source is copied (`COPY .`, `COPY src/`, "
        "`COPY handler.py`).",
        rationale="Every code edit invalidates the COPY layer and re-runs the install of torch & "
        "co. (minutes, GBs) on each build. A copied script the install itself runs (directly or "
        "through the recipes of a `make TARGET`) is not source in this sense.",
        fix="COPY only the requirement/lock files, install, then `COPY . .`.",
        limits="The documented layering passes: `uv sync --no-install-project` (or `poetry "
        "install --no-root`) before `COPY . .` and a plain `uv sync` after it; a project "
        "skeleton (the manifest with the Python files the build backend reads, or a package's "
        "`__init__.py`); a directory whose scripts the next step runs (`COPY installers /tmp/i/` "
        "then `RUN bash /tmp/i/x.sh`). ONBUILD triggers run in other images and are not judged. "
        'A local project install (`pip install -e .`, `".[serve]"`) counts when its '
        "pyproject.toml lists dependencies (those of the extras named too) and no RUN before "
        "the copy installed Python dependencies; one whose dependencies gpuship cannot read "
        "(setup.py only) is not judged. Installs in scripts a RUN runs and in the recipes of a "
        "`make TARGET` count. Of several installs after the copy, the heaviest is reported: "
        "Python dependencies before OS packages, the first of equals.",
        bad_example="COPY . /app\nRUN pip install --no-cache-dir -r /app/requirements.txt",
        good_example="COPY requirements.txt /app/\nRUN pip install --no-cache-dir -r "
        "/app/requirements.txt\nCOPY . /app",
    ),
    Rule(
        id="GSL602",
        name="heavy-step-after-source-copy",
        category="layer-order",
        severity=W,
        summary="A heavy step (weights download, kernel compile) runs after the source is copied.",
        rationale="Each code edit re-runs it: the model downloads again, kernels recompile.",
        fix="Move the heavy step before copying the source.",
        limits="Kernel builds are source-only CUDA projects installed by name (flash-attn, "
        "mamba-ssm, causal-conv1d, Transformer Engine) and CUDA projects from git; prebuilt "
        "wheels and packages that ship wheels or compile at run time (xformers, deepspeed, "
        "auto-gptq installed by name) are not heavy steps.",
        bad_example="COPY . /app\nRUN python -c 'from transformers import AutoModel; "
        'AutoModel.from_pretrained("gpt2")\'',
        good_example="RUN python download_weights.py\nCOPY . /app",
    ),
    Rule(
        id="GSL701",
        name="deleted-in-later-layer",
        category="waste",
        severity=W,
        summary="A file added by one instruction is deleted by a later RUN.",
        rationale="Deleting in a later layer does not shrink the image: the bytes stay in the "
        "earlier layer (e.g. `COPY x.whl` then `RUN rm x.whl`).",
        fix="Create, use and delete in one RUN, or use `RUN --mount=type=bind` for the file.",
        limits="A deletion is traced to the COPY/ADD that put the path there, or to a RUN that "
        "made it (a download's output, a clone, a cache). Below a copied directory of the "
        "build context, only what that directory holds counts; below a copied file, or a "
        "`COPY --from` source whose content gpuship does not see, nothing does: the image may "
        "hold it from its base (`COPY nginx.conf /etc/nginx` then `rm "
        "/etc/nginx/conf.d/default.conf`).",
        bad_example="COPY torch.whl /tmp/\nRUN pip install /tmp/torch.whl\nRUN rm /tmp/torch.whl",
        good_example="RUN --mount=type=bind,source=torch.whl,target=/tmp/torch.whl "
        "pip install /tmp/torch.whl",
    ),
    Rule(
        id="GSL702",
        name="download-left-in-layer",
        category="waste",
        severity=W,
        summary="A RUN downloads a file to install from (a wheel, a .deb, a CUDA or conda "
        "installer, an archive) and leaves it in the final image.",
        rationale="The download stays in the layer beside what it installed: a flash-attn "
        "wheel is hundreds of MB, a CUDA .run installer several GB. Deleting it in a later RUN "
        "does not shrink the image (GSL701).",
        fix="Delete it in the same RUN (`&& rm -f x.whl`), download into a `--mount=type=tmpfs` "
        "or cache mount, or fetch it in a builder stage.",
        bad_example="RUN wget -q https://example.com/fa-2.7.4-cp311-cp311-linux_x86_64.whl \\\n"
        "    && pip install --no-cache-dir fa-2.7.4-cp311-cp311-linux_x86_64.whl",
        good_example="RUN wget -q https://example.com/fa-2.7.4-cp311-cp311-linux_x86_64.whl \\\n"
        "    && pip install --no-cache-dir fa-2.7.4-cp311-cp311-linux_x86_64.whl \\\n"
        "    && rm -f fa-2.7.4-cp311-cp311-linux_x86_64.whl",
        limits="Where the file lands is read from curl/wget's options and the `cd`s of the RUN; "
        "any deletion in the RUN that may reach it (a glob, a directory holding it, a path held "
        "in a variable; a relative path such as `find . -delete` from the directory it runs "
        "in) counts, and a download made inside a script the RUN runs is not "
        "judged. A file the RUN moves (`mv x.sh /tmp/i.sh`) is followed to where it went, "
        "into a directory of that name too. Weight files are GSL202's." + _TRIGGERS,
    ),
    Rule(
        id="GSL703",
        name="tree-stored-again-by-chown",
        category="waste",
        severity=W,
        summary="A later RUN changes the owner or mode of a whole tree an earlier instruction "
        "added (`chown -R`, `chmod -R`): its layer stores every file again.",
        rationale="A layer records each file whose owner or mode changed in full, content "
        "included: `COPY . /app` then `RUN chown -R app:app /app` ships the application twice, "
        "and a virtualenv or model under it too.",
        fix="Set owner and mode as the files arrive (`COPY --chown=app:app`, `COPY "
        "--chmod=755`), or in the RUN that creates them.",
        limits="Read for `chown`, `chgrp` and `chmod` with `-R`/`--recursive` in a RUN of the "
        "final image, on a path an earlier COPY/ADD or RUN of the stage added, or a directory "
        "holding one (as GSL701 traces them). Trees of the base image are not judged: what "
        "they weigh is unknown to gpuship.",
        bad_example="COPY . /app\nRUN chown -R app:app /app",
        good_example="COPY --chown=app:app . /app",
    ),
    Rule(
        id="GSL801",
        name="large-context-copy",
        category="size",
        severity=W,
        summary="A COPY/ADD takes more than `lint.large-copy-mib` from the build context.",
        rationale="Big context copies (datasets, checkpoints, virtualenvs, .git) bloat the image "
        "and slow every build upload.",
        fix="Exclude the bulk in .dockerignore or copy only what the image needs.",
        bad_example="COPY . /app  # context holds a 3 GB dataset",
        good_example="COPY src/ /app/src/",
    ),
    Rule(
        id="GSL905",
        name="private-key-in-image",
        category="security",
        severity=E,
        summary="A private key (an SSH `id_*` key, a PEM/OpenSSH private key file) is copied "
        "into the image.",
        rationale="Anyone who can pull the image (or a builder stage's cached layers) reads the "
        "key and can log in, or clone, as its owner; deleting it in a later layer does not "
        "remove it. An error when the copied file's content is a private key and the image "
        "ships it; a warning for a key known only by name or kept in a builder stage.",
        fix="Use `RUN --mount=type=ssh` (ssh-agent forwarding) or `RUN --mount=type=secret` for "
        "the one step that needs it.",
        bad_example="COPY id_ed25519 /root/.ssh/id_ed25519\n"
        "RUN git clone git@github.com:org/private",
        good_example="RUN --mount=type=ssh git clone git@github.com:org/private",
        limits="Files of a COPY are opened to look for key armour only when their name suggests "
        "a key (`id_*`, `*.pem`, `*.key`, files under `.ssh/`); a key under another name in a "
        "`COPY .` is not found. Keys copied from another stage or image are not read. A key name "
        "counts only for a file (a directory such as `identity/` is a package), and "
        "`identity`, an ordinary word, only in or into a `.ssh/` directory.",
        security_severity=9.0,
    ),
    Rule(
        id="GSL906",
        name="passwordless-sudo",
        category="security",
        severity=W,
        summary="A sudoers rule gives a user `NOPASSWD: ALL`.",
        rationale="The user becomes root without a password, so running the image as that user "
        "(USER app) protects nothing: a compromised model server owns the container.",
        fix="Drop sudo from the runtime image; do root work at build time, or allow only the "
        "commands needed (`NOPASSWD: /usr/bin/apt-get`).",
        bad_example="RUN echo 'app ALL=(ALL) NOPASSWD:ALL' >> /etc/sudoers\nUSER app",
        good_example="RUN useradd -u 10001 app\nUSER 10001",
        limits="Read from RUNs that write /etc/sudoers or /etc/sudoers.d and from sudoers files "
        "copied there from the context; a rule written by a script the RUN runs counts when "
        "the RUN names the sudoers path. Rules limited to some commands are not reported."
        + _TRIGGERS,
        security_severity=6.0,
    ),
    Rule(
        id="GSL901",
        name="secret-in-build-arg-or-env",
        category="security",
        severity=E,
        summary="A token or key is passed through ARG or ENV (HF_TOKEN, WANDB_API_KEY, "
        "AWS_SECRET_ACCESS_KEY...).",
        rationale="ENV values are stored in the image config and ARG values in its history: "
        "anyone who can pull the image can read them.",
        fix="Use `RUN --mount=type=secret,id=hf_token,env=HF_TOKEN` (BuildKit secrets).",
        limits="An ARG before the first FROM is seen by FROM lines only: no RUN, and so no "
        "image history, has it unless a stage declares it again, and that ARG is reported. "
        "Names that say what a credential is called, counted or timed (`SECRET_ID`, "
        "`HF_TOKEN_SECRET_ID`, `TOKEN_BUCKET_RATE`, `..._PATH`, `..._URL`), an ARG that names a "
        "secret mount (`--mount=type=secret,id=${SECRET_ID}`), and values that say none is set "
        "(`EMPTY`, as vLLM documents for OPENAI_API_KEY, `dummy`, `none`, `placeholder`) are "
        "not reported; a weak real password (`changeme`) is.",
        bad_example="ARG HF_TOKEN\nRUN huggingface-cli login --token $HF_TOKEN",
        good_example="RUN --mount=type=secret,id=hf_token,env=HF_TOKEN python fetch.py",
        security_severity=8.0,
        hadolint=("DL3064",),
    ),
    Rule(
        id="GSL902",
        name="remote-script-piped-to-shell",
        category="security",
        severity=W,
        summary="A downloaded script is piped straight into a shell or interpreter.",
        rationale="Whatever the server returns runs as root in the build, unverified.",
        fix="Download to a file, verify its checksum, then run it (or install a pinned package).",
        limits=_TRIGGERS[1:],
        bad_example="RUN curl -LsSf https://astral.sh/uv/install.sh | sh",
        good_example="COPY --from=ghcr.io/astral-sh/uv:0.5.11 /uv /bin/uv",
        security_severity=6.5,
    ),
    Rule(
        id="GSL903",
        name="final-user-root",
        category="security",
        severity=N,
        summary="The final image runs as root.",
        rationale="A compromised model server as root owns the container and any mounted volume.",
        fix="Create a user and end with `USER <uid>`.",
        bad_example='FROM python:3.12-slim\nCMD ["python", "serve.py"]',
        good_example="FROM python:3.12-slim\nRUN useradd -u 10001 app\nUSER 10001\n"
        'CMD ["python", "serve.py"]',
        security_severity=4.0,
        hadolint=("DL3002",),
    ),
    Rule(
        id="GSL904",
        name="tls-verification-disabled",
        category="security",
        severity=W,
        summary="A download turns TLS certificate checks off (`curl -k`, `wget "
        "--no-check-certificate`, `pip --trusted-host`, `git -c http.sslVerify=false`).",
        rationale="Without certificate checks anyone on the network path can serve the build "
        "another file; nothing in the image shows it happened.",
        fix="Keep verification on; install the CA certificate the server needs instead.",
        limits=_TRIGGERS[1:],
        bad_example="RUN curl -kfsSLo /tmp/tool.tgz https://example.com/tool.tgz",
        good_example="RUN curl -fsSLo /tmp/tool.tgz https://example.com/tool.tgz",
        security_severity=5.0,
    ),
    Rule(
        id="GSL907",
        name="package-signature-check-disabled",
        category="security",
        severity=W,
        summary="A package install accepts packages without a valid signature "
        "(`--allow-unauthenticated`, `[trusted=yes]`, `apk --allow-untrusted`, "
        "`dnf --nogpgcheck`).",
        rationale="Package signatures are what tie a package to its distribution: without "
        "them a mirror, a proxy or anyone on the network path can serve the build another "
        "package, which then runs as root in the image.",
        fix="Install the repository's signing key (`signed-by=` a keyring fetched over HTTPS "
        "and checked) and keep the checks on.",
        limits="Read from apt-get/apt/aptitude (`--allow-unauthenticated`, "
        "`--allow-insecure-repositories`, the deprecated `--force-yes` that implies them, "
        "`-o APT::Get::AllowUnauthenticated=true`, `-o Acquire::AllowInsecureRepositories=true`), "
        "apt sources written by a RUN with `[trusted=yes]`, `apk --allow-untrusted`, "
        "dnf/yum/microdnf `--nogpgcheck` or `--setopt=gpgcheck=0`, and `rpm --nosignature`; "
        "settings in apt.conf or .repo files copied from the context are not read." + _TRIGGERS,
        bad_example="RUN apt-get update && apt-get install -y --allow-unauthenticated "
        "libnccl2=2.21.5-1+cuda12.4",
        good_example="RUN apt-get update && apt-get install -y libnccl2=2.21.5-1+cuda12.4",
        security_severity=7.5,
    ),
    Rule(
        id="GSL908",
        name="signing-key-over-http",
        category="security",
        severity=W,
        summary="A package signing key is fetched over plain HTTP and trusted (`curl http://... "
        "| apt-key add -`, `rpm --import http://...`).",
        rationale="The signing key decides which packages the image trusts; fetched without "
        "TLS, anyone on the network path can put their own key in its place and then sign "
        "whatever packages they serve.",
        fix="Fetch the key over HTTPS (and check its fingerprint), or copy it from the build "
        "context.",
        limits="Read for curl/wget of an `http://` URL piped into `apt-key add`, `gpg "
        "--import`/`--dearmor` or a `tee` into a keyring, or written into one (/etc/apt/"
        "trusted.gpg.d, /etc/apt/keyrings, /usr/share/keyrings, /etc/pki/rpm-gpg); `apt-key "
        "adv --fetch-keys http://...`; `rpm --import http://...`; `ADD http://...` into a "
        "keyring. Keys fetched from a keyserver by fingerprint are not judged." + _TRIGGERS,
        bad_example="RUN curl -fsSL http://repo.example.com/key.gpg | apt-key add -",
        good_example="RUN curl -fsSL https://repo.example.com/key.gpg "
        "| gpg --dearmor -o /usr/share/keyrings/example.gpg",
        security_severity=7.0,
    ),
    Rule(
        id="GSL909",
        name="ssh-key-generated-at-build",
        category="security",
        severity=W,
        summary="`ssh-keygen` runs at build time and leaves a private key in the image.",
        rationale="A key generated while the image builds is the same in every container "
        "started from it, and anyone who can pull the image has it: host keys made by "
        "`ssh-keygen -A` let one container impersonate all the others, a user key gives "
        "everyone who pulls the image its access.",
        fix="Generate host keys when the container starts (an entrypoint `ssh-keygen -A`), "
        "mount user keys as secrets, or use `RUN --mount=type=ssh`.",
        limits="Read in the RUNs of the final image; a key the same RUN deletes, or writes to "
        "a mounted directory, is not reported, nor `ssh-keygen` modes that write no new "
        "private key (`-l`, `-y`, `-R`, `-p`...). Host keys that installing openssh-server "
        "generates (Debian's postinst) are not judged." + _TRIGGERS,
        bad_example="RUN apt-get install -y openssh-server && ssh-keygen -A",
        good_example='ENTRYPOINT ["/bin/sh", "-c", "ssh-keygen -A && exec /usr/sbin/sshd -D"]',
        security_severity=7.5,
    ),
)
