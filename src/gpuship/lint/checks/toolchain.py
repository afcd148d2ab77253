"""Toolchains in the final image: CUDA `devel` bases and compilers."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuship.lint.analysis import Analysis, Run
from gpuship.lint.checks.base import Hit, at_instruction, at_word, image_runs, image_token
from gpuship.lint.checks.cudabase import base_cuda
from gpuship.lint.checks.pinning import project_manifests
from gpuship.lint.packages import Spec, os_install, os_package_name
from gpuship.lint.shell import Command, Word

# conda's package managers: their `remove`/`uninstall` purges what they installed.
_CONDAS = ("conda", "mamba", "micromamba")

# Toolchain packages, also with a suffix (`cuda-nvcc-12-4`, `cmake-data`).
_TOOLCHAINS = (
    "build-essential",
    "cmake",
    "ninja-build",
    "gfortran",
    "cuda-toolkit",
    "cuda-nvcc",
    "cuda-compiler",
    "cuda-minimal-build",
    "cuda-libraries-dev",
    "gcc-c++",
    "alpine-sdk",
    "build-base",
)
# Compilers by name, alone or versioned (`gcc-11`, `clang-18`, `llvm-14-dev`, `gcc-$VERSION`);
# not the tools named after them (`clang-format`, `clang-tidy`, `gcc-doc`), which compile nothing.
_COMPILER = re.compile(r"^(?:gcc|g\+\+|clang|llvm)(?:-(?:\d[\w.]*|\$\S+))?(?:-dev)?$")
# Build drivers that compile nothing themselves: a toolchain only beside a compiler (`make` alone
# is a 0.5 MB package that many runtime scripts use).
_BUILD_DRIVERS = ("make",)
# Packages that compile kernels at run time and so may need a toolchain in the final image:
# Triton (and vLLM/SGLang, which run Triton kernels) builds its launcher with the system C
# compiler; flashinfer and DeepSpeed JIT-build extensions with nvcc and the host C++ compiler.
_JIT_USERS = ("triton", "flashinfer", "deepspeed", "vllm", "sglang", "torch-tensorrt", "apex")
# The C/C++ compiler packages such a run-time build calls (a distribution's meta-package for
# them too); cmake, ninja and nvcc stay findings.
_HOST_COMPILERS = ("build-essential", "gcc-c++", "build-base")
# The variables naming the CUDA tools Triton runs when it compiles a kernel, in place of the
# copies its wheel bundles (triton-lang/triton's setup.py fetches each under these names). Set
# in the final image's environment, they say its CUDA compiler packages are for Triton's
# run-time compiles (NGC-style images point TRITON_PTXAS_PATH at /usr/local/cuda/bin/ptxas).
_TRITON_TOOL_VARIABLES = (
    "TRITON_PTXAS_PATH",
    "TRITON_PTXAS_BLACKWELL_PATH",
    "TRITON_CUOBJDUMP_PATH",
    "TRITON_NVDISASM_PATH",
)
# The packages that bring ptxas, cuobjdump and nvdisasm (and nvcc with them).
_CUDA_COMPILERS = ("cuda-nvcc", "cuda-compiler", "cuda-minimal-build", "cuda-toolkit")


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL401/402: devel bases and compilers in the final image."""
    allowed = {a.lower() for a in analysis.config.allowed_toolchains}
    if analysis.build.final_chain:
        yield from _devel_base(analysis, allowed)
    jit = _jit_users(analysis)
    triton = _triton_tools(analysis)
    for run in image_runs(analysis):
        stated = _stated_jit(analysis, run)
        for command in run.commands:
            yield from _compilers(run, command, allowed, (jit, triton), stated)


def _triton_tools(analysis: Analysis) -> str | None:
    """The first of Triton's tool variables the final image's environment sets, if any (none
    in a file without a stage)."""
    if not analysis.build.final_chain:
        return None
    env = analysis.build.stages[analysis.build.target].image_env
    return next((name for name in _TRITON_TOOL_VARIABLES if env.get(name)), None)


def _jit_users(analysis: Analysis) -> list[str]:
    """The packages of the final image that compile code at run time (`_JIT_USERS`), named on
    an install's command line or in the requirement files and pyproject.toml it installs."""
    found: set[str] = set()
    for run in image_runs(analysis):
        for command in run.commands:
            install = run.python_install(command)
            if install is None:
                continue
            specs = list(install.specs)
            env = run.env_at(command)
            files: list[tuple[str, tuple[str, ...]]] = [
                (w.text, ()) for w in install.requirement_files
            ]
            files += [(path, extras) for _, path, extras in project_manifests(install)]
            for path, extras in files:
                specs += [item.spec for item in analysis.file_specs(run, path, env, extras=extras)]
            for spec in specs:
                found.update(j for j in _JIT_USERS if _is_package(spec, j))
    return sorted(found)


# A comment right above a RUN that says its toolchain is for compiling at run time.
_JIT_COMMENT = re.compile(
    r"\bjit\b|just[- ]in[- ]time|\b(triton|flashinfer|deepspeed)\b"
    r"|compil\w*\b.{0,40}\brun[- ]?time|\brun[- ]?time\b.{0,40}\bcompil",
    re.IGNORECASE,
)


def _comment_lines(analysis: Analysis) -> dict[int, str]:
    """The file's comment lines by number. Once per file."""
    return {c.line: c.text for c in analysis.parsed.comments}


def _stated_jit(analysis: Analysis, run: Run) -> str | None:
    """The comment directly above `run` (its block of comment lines) when it says the RUN's
    compilers are for compiling at run time ("# gcc: Triton JIT-compiles its launcher"), else
    None: the file says so, and the toolchain that RUN installs is kept."""
    lines = analysis.per_file(_comment_lines)
    line = run.instruction.start_line - 1
    block = []
    while line in lines:
        block.append(lines[line])
        line -= 1
    text = " ".join(reversed(block))
    return text if _JIT_COMMENT.search(text) else None


def _is_package(spec: Spec, project: str) -> bool:
    """`vllm==0.6.3`, `triton`, a `vllm-0.6.3-....whl` file; not `tritonclient` (another
    project that compiles nothing)."""
    if spec.name:
        return spec.name.lower().replace("_", "-") == project
    file = spec.text.rsplit("/", 1)[-1].lower().replace("_", "-")
    return file.startswith(project + "-")


def _devel_base(analysis: Analysis, allowed: set[str]) -> Iterator[Hit]:
    if {"devel", "nvcc", "cuda-devel"} & allowed:
        return
    target = analysis.build.stages[analysis.build.target]
    root = analysis.build.root_base(target)
    base = base_cuda(root)
    if base is None or base.flavor != "devel":
        return
    shown = root.base.split("@", 1)[0]
    message = (
        f"the final image is built on {shown}, a `devel` image (compiler, headers, "
        "static libraries: GBs more than `-runtime`); compile in a builder stage and "
        "copy the results into a `-runtime` stage"
    )
    jit = _jit_users(analysis)
    if jit:
        message += (
            f". If {', '.join(jit)} JIT-compiles kernels at run time, keep it and "
            "suppress with `# gpuship ignore=GSL401 -- <reason>`"
        )
    yield at_instruction("GSL401", message, root.from_instruction, root, image_token(root))


# conda packages that bring a compiler: NVIDIA's `cuda` metapackage (cuda-runtime and
# cuda-toolkit, "all toolkit packages for CUDA development": nvcc with them), its toolkit and
# compiler parts, conda-forge's compiler metapackages and their toolchains.
_CONDA_TOOLCHAINS = frozenset(
    {"cuda", "cuda-toolkit", "cuda-nvcc", "cuda-compiler", "cudatoolkit-dev", "nvcc_linux-64"}
)
_CONDA_HOST_COMPILERS = frozenset(
    {"compilers", "c-compiler", "cxx-compiler", "gcc", "gxx", "gcc_linux-64", "gxx_linux-64"}
)


def _installed(run: Run, command: Command) -> list[tuple[Word, str, bool, bool]]:
    """Each toolchain package `command` installs: its word, name, whether it is a C/C++
    compiler (kept for JIT users) and whether it is only a build driver (`make`)."""
    install = os_install(command)
    if install is not None:
        found = []
        for word in install.packages:
            name = os_package_name(install.manager, word.text).lower()
            if name.endswith("-config-common"):
                continue  # NVIDIA's cuda-toolkit-X-Y-config-common: the library path only
            host = bool(_COMPILER.match(name)) and not name.startswith("llvm")  # Triton's LLVM
            if (
                any(name == c or name.startswith(c + "-") for c in _TOOLCHAINS)
                or _COMPILER.match(name)
                or name in _BUILD_DRIVERS
            ):
                found.append((word, name, host or name in _HOST_COMPILERS, name in _BUILD_DRIVERS))
        return found
    python = run.python_install(command)
    if python is None or python.tool != "conda":
        return []
    return [
        (spec.word, spec.name, spec.name in _CONDA_HOST_COMPILERS, False)
        for spec in python.specs
        if spec.word and spec.name in _CONDA_TOOLCHAINS | _CONDA_HOST_COMPILERS
    ]


def _compilers(
    run: Run,
    command: Command,
    allowed: set[str],
    runtime: tuple[list[str], str | None],
    stated: str | None,
) -> Iterator[Hit]:
    """GSL402 for the toolchain packages `command` installs, but those the file keeps for
    compiling at run time: `runtime` is the JIT users the image installs and the Triton tool
    variable its environment sets."""
    jit, triton = runtime
    packages = _installed(run, command) if stated is None else []
    found = []
    needed = []  # C/C++ compilers the JIT users call at run time: kept, not findings
    for_triton = []  # CUDA compiler packages whose tools the image points Triton at
    for word, name, host, _ in packages:
        if name in allowed:
            continue
        if jit and host:
            needed.append(word.text)
            continue
        if triton and any(name == c or name.startswith(c + "-") for c in _CUDA_COMPILERS):
            for_triton.append(word.text)
            continue
        found.append(word)
    if all(driver for word, _, _, driver in packages if word in found):
        return
    purged = _purged_later(run, command)
    names_of = {id(word): name for word, name, _, _ in packages}
    kept = [w for w in found if w.text not in purged and names_of[id(w)] not in purged]
    if not kept:
        return
    names = ", ".join(w.text for w in kept)
    why = ""
    if needed:
        why = (
            f" ({', '.join(needed)} not counted: {', '.join(jit)} compiles with the system "
            "C/C++ compiler at run time)"
        )
    if for_triton:
        why += f" ({', '.join(for_triton)} not counted: the image sets {triton} for Triton)"
    yield at_word(
        "GSL402",
        f"{names} stay in the final image; build in a separate stage and "
        f"copy the artefacts (or purge in this RUN){why}",
        run,
        command,
        kept[0],
    )


def _purged_later(run: Run, command: Command) -> set[str]:
    commands = list(run.commands)
    purged: set[str] = set()
    virtual = None
    argv = command.argv
    if "--virtual" in argv or "-t" in argv:
        flag = "--virtual" if "--virtual" in argv else "-t"
        index = argv.index(flag)
        virtual = argv[index + 1] if index + 1 < len(argv) else None
    for other in commands[commands.index(command) + 1 :]:
        other_argv = other.argv
        if other.name in ("apt-get", "apt", "dnf", "yum", "microdnf", *_CONDAS) and any(
            v in other_argv for v in ("purge", "remove", "autoremove", "erase", "uninstall")
        ):
            purged.update(other_argv)
        if other.name == "apk" and "del" in other_argv:
            if virtual and virtual in other_argv:
                purged.update(w.text for w in command.words)
            purged.update(other_argv)
    return purged
