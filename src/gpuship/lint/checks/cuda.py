"""CUDA consistency: torch wheel variants vs the knowledge base and the base image, CUDA
libraries installed twice, apt CUDA packages for another CUDA, NVIDIA_REQUIRE_* overrides, and
arch lists for kernel builds.

Version facts (which variants a torch release publishes, its PyPI default, minimum drivers,
wheel sizes) come from the CUDA knowledge base (`gpuship.cuda`). What it does not hold is never
guessed: it is reported as unknown to gpuship (GSL508, a note), and a variant is called missing
(GSL501, an error) only for a release whose variant list the knowledge base holds complete.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gpuship.cuda.drivers import min_driver_for
from gpuship.cuda.errors import InvalidRequirement, InvalidVersion, UnknownVersion
from gpuship.cuda.require import go_parse_bool, validate_expression
from gpuship.cuda.torch import (
    Availability,
    LibraryWheels,
    TorchRelease,
    cuda_of_variant,
    image_libraries,
    known_torch_releases,
    last_release_with,
    library_wheels,
    recorded_torch_releases,
    torch_release,
)
from gpuship.cuda.version import Version
from gpuship.lint.analysis import Analysis, FileSpec, Run, container_path
from gpuship.lint.checks import cudapackages
from gpuship.lint.checks.base import (
    Hit,
    at_instruction,
    at_spec,
    at_word,
    final_runs,
    image_reference,
    reachable_runs,
)
from gpuship.lint.checks.cudabase import BaseCuda, base_cuda
from gpuship.lint.checks.torchindex import PYPI_DEFAULT, Resolved, release_of, resolve
from gpuship.lint.checks.wheels import TorchFacts, foreign_wheels
from gpuship.lint.packages import PythonInstall, Spec, os_install
from gpuship.lint.shell import Command, Word
from gpuship.lint.stages import Env, Stage, env_pairs, expand, expand_word
from gpuship.report import Severity

_LOCAL_VARIANT = re.compile(r"\+(cu\d+|cpu|rocm[\d.]+)")
_REQUIRE_CUDA = re.compile(r"cuda\s*>=?\s*(\d+\.\d+)")
# Projects whose PyPI release is a source distribution that compiles CUDA kernels when installed
# by name (their setup.py may first try a prebuilt wheel from the project's GitHub release):
# a heavy step either way. They pass their own -gencode flags (flash-attn: FLASH_ATTN_CUDA_ARCHS,
# default 80;90;100;110;120, Dao-AILab/flash-attention setup.py @ 0251105a; mamba-ssm and
# causal-conv1d likewise; Transformer Engine: NVTE_CUDA_ARCHS), so TORCH_CUDA_ARCH_LIST does not
# steer them.
_SOURCE_RELEASES = (
    "flash-attn",
    "flash_attn",
    "mamba-ssm",
    "mamba_ssm",
    "causal-conv1d",
    "causal_conv1d",
    "transformer-engine",
    "transformer_engine",
    "grouped_gemm",
    "grouped-gemm",
)
# Projects built from source (a git URL, a clone, a local tree) with torch.utils.cpp_extension,
# whose kernels target TORCH_CUDA_ARCH_LIST or, without it, the GPUs torch sees on the build
# machine. Installed by name they come as prebuilt wheels (xformers, auto-gptq) or compile at
# run time (deepspeed), and build nothing.
_TORCH_ARCH_PROJECTS = (
    "apex",
    "xformers",
    "detectron2",
    "pytorch3d",
    "gsplat",
    "vllm",
    "auto-gptq",
    "autogptq",
    "exllamav2",
    "mmcv",
)
# setup.py contents that build CUDA code (torch.utils.cpp_extension, raw .cu sources).
_CUDA_BUILD = re.compile(r"CUDAExtension|BuildExtension|\.cu['\"]|nvcc")
# A setup.py that chooses its own targets: it sets TORCH_CUDA_ARCH_LIST itself, or passes
# arch flags, which cpp_extension then leaves alone (pytorch/pytorch#23408: an `arch` in
# extra_compile_args is kept as is).
_OWN_ARCH_LIST = re.compile(
    r"TORCH_CUDA_ARCH_LIST|-gencode|--generate-code|arch=compute_|arch=sm_|-arch[= ]|"
    r"--gpu-architecture"
)
# llama-cpp-python's CMAKE_ARGS switches: CUDA on, the arch list, ggml's native switch.
_GGML_CUDA_ON = re.compile(r"-DGGML_CUDA=(?:on|1|true|yes)\b", re.IGNORECASE)
_GGML_NATIVE_OFF = re.compile(r"-DGGML_NATIVE=(?:off|0|false|no)\b", re.IGNORECASE)
# Duplicated CUDA wheels of at least this many MB (10^6 bytes) make GSL503 a warning.
LARGE_DUPLICATE_MB = 1000.0
# `nvidia-cudnn-cu12`, `nvidia-cublas` (CUDA 13 names drop the suffix): library and CUDA major.
_NVIDIA_WHEEL = re.compile(r"^nvidia-(?:cuda-)?([a-z]+)(?:-cu(\d+))?$")
# apt CUDA library packages: `+cuda12.2` version suffixes and `-12-2` / `-cuda-12` names.
_APT_CUDA_SUFFIX = re.compile(r"\+cuda(\d+)\.(\d+)")
_APT_CUDA_NAME = re.compile(
    r"^(?:cuda|libcu|libnpp|libnv|libnccl|libcudnn|cudnn|libcufile|libcusparselt)"
    r"[a-z0-9-]*?-(?:(\d+)-(\d+)|cuda-(\d+))$"
)
# Specifiers that keep torch to one minor release (whose PyPI default is known).
_ONE_RELEASE = re.compile(r"(?:==|~=)(\d+\.\d+)(?:\.\*|\.\d+)")


@dataclass(frozen=True)
class TorchInstall:
    """A torch spec with the wheel variant it resolves to."""

    run: Run
    command: Command
    spec: Spec
    word: Word | None  # the torch argument on the RUN line; None when read from a file
    file: FileSpec | None  # the requirements line that names torch
    file_path: Path | None
    version: str | None  # "2.6.0" when pinned
    variant: str | None  # "cu126", "cpu", ... None: the PyPI default
    variant_word: str | None  # the text that chose the variant (index URL, +local)
    # An extra index whose variant pip passes over: (its URL text, the variant, the last
    # release that has it).
    passed_over: tuple[str, str, Version] | None = None
    # How the indexes read decide the variant: several that disagree leave it unknown, none
    # with the pinned release make it missing.
    indexes: Resolved = PYPI_DEFAULT
    tool: str = "pip"  # the installer that resolves it (pip for an environment file's `pip:`)

    @property
    def unknown(self) -> bool:
        """Several indexes may supply torch and disagree: its variant is unknown."""
        return self.indexes.unknown

    def hit(self, rule: str, message: str, severity: Severity | None = None) -> Hit:
        """A hit on the torch argument, or on the requirements line that names torch."""
        return at_spec(
            rule,
            message,
            self.run,
            self.command,
            self.word,
            self.file,
            self.file_path,
            severity,
        )

    @property
    def shown(self) -> str:
        """`torch 2.7.0 (cu126)` / `torch 2.7.0 from PyPI (default variant cu126)`."""
        name = f"torch {self.version}" if self.version else "torch"
        if self.unknown:
            return f"{name} ({' or '.join(self.indexes.candidates) or 'variant unknown'})"
        if self.variant is not None:
            return f"{name} ({self.variant})"
        default = _pypi_default(self.version)
        return f"{name} from PyPI" + (f" (default variant {default})" if default else "")


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL501-511: torch/CUDA consistency, NVIDIA_REQUIRE_* overrides, arch lists, wheels
    built for another stack."""
    torches = list(_torch_installs(analysis))
    yield from _known(torches)
    yield from _passed_over(torches)
    yield from _differs_from_base(analysis, torches)
    yield from _twice(analysis, torches)
    yield from _require_env(analysis, torches)
    yield from _arch_list(analysis)
    yield from _apt_packages(analysis)
    yield from cudapackages.check(analysis, _cudnn_stacks(analysis, torches))
    yield from foreign_wheels(analysis, [_torch_facts(t) for t in torches])


def _torch_facts(torch: TorchInstall) -> TorchFacts:
    """What the wheel check needs of a torch install: its release, CUDA and range."""
    release = None
    if torch.version:
        try:
            release = str(Version.parse(torch.version).major_minor())
        except InvalidVersion:
            release = None
    specifier = torch.spec.specifier if torch.spec.kind == "name" else ""
    return TorchFacts(torch.run, release, _torch_cuda(torch), torch.shown, specifier)


def _torch_installs(analysis: Analysis) -> Iterator[TorchInstall]:
    """torch on RUN lines, in requirement files those RUNs install from, and in the `pip:`
    section of conda environment files."""
    for run in reachable_runs(analysis):
        for command in run.commands:
            for item in analysis.requested(run, command):
                if item.spec.name != "torch" or (item.file and item.file.tool == "conda"):
                    continue
                yield _torch(
                    run,
                    item.install,
                    item.spec,
                    run.env_at(command),
                    word=item.spec.word if item.file is None else None,
                    file=item.file,
                    file_path=item.file_path,
                )


def _torch(
    run: Run,
    install: PythonInstall,
    spec: Spec,
    env: Env,
    *,
    word: Word | None = None,
    file: FileSpec | None = None,
    file_path: Path | None = None,
) -> TorchInstall:
    command = install.command
    version = spec.version.split("+", 1)[0] if spec.version else _one_release(spec.specifier)
    local = _LOCAL_VARIANT.search(spec.version or "")
    variant: str | None
    chosen_by: str | None
    passed_over = None
    indexes = PYPI_DEFAULT
    if local:
        variant, chosen_by = local.group(1), spec.text
    else:
        indexes = resolve(install, env, file, version)
        variant, chosen_by = indexes.variant, indexes.chosen_by
        last = _newer_without(variant, spec) if indexes.extra and variant else None
        if last is not None and variant and chosen_by:
            passed_over = (chosen_by, variant, last)
            variant, chosen_by = None, None  # a PyPI build of a release gpuship cannot name
    return TorchInstall(
        run,
        command,
        spec,
        word,
        file,
        file_path,
        version,
        variant,
        chosen_by,
        passed_over,
        indexes,
        install.tool,
    )


def _newer_without(variant: str, spec: Spec) -> Version | None:
    """The last torch release with `variant` when torch no longer builds it and `spec` admits a
    release after that one (known to exist): then the newest matching torch of all indexes is
    a PyPI build, not a `variant` one."""
    last = last_release_with(variant)
    if last is None or (spec.kind == "name" and spec.pinned):
        return None
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        allowed = SpecifierSet(spec.specifier)
    except InvalidSpecifier:
        return None
    later = [v for v in known_torch_releases() if v > last]
    admitted = [v for v in later if allowed.contains(f"{v}.0", prereleases=True)]
    return last if admitted else None


def _one_release(specifier: str) -> str | None:
    """The torch release (major.minor) a specifier keeps to: `==2.7.*`, `~=2.7.0` -> "2.7"."""
    match = _ONE_RELEASE.fullmatch(specifier.replace(" ", ""))
    return match.group(1) if match else None


def _cuda(variant: str | None) -> Version | None:
    if variant is None or not variant.startswith("cu"):
        return None
    try:
        return cuda_of_variant(variant)
    except InvalidVersion:
        return None


def _pypi_default(version: str | None) -> str | None:
    if version is None:
        return None
    try:
        return torch_release(version).pypi_default
    except (UnknownVersion, InvalidVersion):
        return None


def _known(torches: list[TorchInstall]) -> Iterator[Hit]:
    """GSL501 where the knowledge base knows a variant is missing, GSL508 where it cannot tell."""
    for torch in torches:
        if torch.version is None:
            continue  # unpinned: GSL105's business
        try:
            release = torch_release(torch.version)
        except InvalidVersion:
            continue
        except UnknownVersion:
            if torch.unknown or (torch.variant and not torch.variant.startswith("cu")):
                continue  # a CPU/ROCm build, or several indexes that disagree
            releases = recorded_torch_releases()
            yield torch.hit(
                "GSL508",
                f"torch {torch.version} is unknown to gpuship (its knowledge base records the "
                f"wheels of torch {releases[0]} to {releases[-1]}): which CUDA it bundles is "
                "not checked",
            )
            continue
        if torch.indexes.missing:
            yield _missing(torch, release)
            if torch.unknown:
                continue  # the install fails; a PyPI fallback is judged below
        if torch.unknown or (torch.variant and not torch.variant.startswith("cu")):
            continue  # several indexes may supply it, or a CPU/ROCm build
        cuda = _cuda(torch.variant)
        if cuda is None:
            if torch.variant is None and release.pypi_default is None:
                yield torch.hit(
                    "GSL508",
                    f"which CUDA torch {torch.version} from PyPI bundles is unknown to gpuship "
                    f"(no PyPI default recorded for {release.version}): it is not checked",
                )
            continue
        availability = release.availability(cuda)
        listed = release.variant_names()
        if availability is Availability.ABSENT:  # a `+cuXXX` the release lacks
            yield torch.hit(
                "GSL501",
                f"torch {torch.version} has no {torch.variant} wheel: its CUDA builds are "
                f"{listed} (gpuship's list for {release.version} is complete); "
                f"`{torch.variant_word}` cannot provide it",
            )
        elif availability is Availability.UNKNOWN:
            yield torch.hit(
                "GSL508",
                f"whether torch {torch.version} has a {torch.variant} wheel is unknown to "
                f"gpuship: it lists {listed} for {release.version}, and that list is not known "
                "to be complete",
            )


def _missing(torch: TorchInstall, release: TorchRelease) -> Hit:
    """GSL501 when no variant index the install reads has the release: the install fails, or
    pip falls back to PyPI's build of it (a warning: the image builds, with another CUDA)."""
    missing = torch.indexes.missing
    variants = " or ".join(dict.fromkeys(i.variant for i in missing))
    urls = ", ".join(f"`{text}`" for text in dict.fromkeys(i.text for i in missing))
    message = (
        f"torch {torch.version} has no {variants} wheel: its CUDA builds are "
        f"{release.variant_names()} (gpuship's list for {release.version} is complete); "
        f"{urls} cannot provide it"
    )
    if torch.indexes.pypi:
        tool = torch.tool
        default = release.pypi_default
        build = f"default variant {default}" if default else "a CUDA variant gpuship does not know"
        return torch.hit(
            "GSL501",
            f"{message}, so {tool} installs PyPI's torch {torch.version} ({build}) instead",
            Severity.WARNING,
        )
    return torch.hit("GSL501", message)


def _passed_over(torches: list[TorchInstall]) -> Iterator[Hit]:
    """GSL510: an extra index of a CUDA variant that pip passes over for PyPI's newer torch."""
    for torch in torches:
        if torch.passed_over is None:
            continue
        url, variant, last = torch.passed_over
        name = torch.tool
        yield torch.hit(
            "GSL510",
            f"`{torch.spec.text}` admits releases after torch {last}, the last with a {variant} "
            f"wheel, and `{url}` only adds an index: {name} takes the newest torch of all "
            f"indexes, a PyPI build (no release after {last} has {variant}; gpuship records "
            f"the wheels of torch up to {recorded_torch_releases()[-1]}), not a {variant} one",
        )


def _torch_cuda(torch: TorchInstall) -> Version | None:
    """The CUDA a torch install bundles: its variant, else the release's PyPI default; None
    when unknown (several indexes that disagree)."""
    if torch.unknown:
        return None
    if torch.variant is not None:
        return _cuda(torch.variant)
    return _cuda(_pypi_default(torch.version))


def _min_driver(cuda: Version) -> str:
    try:
        return f" (driver >= {min_driver_for(cuda)})"
    except (UnknownVersion, InvalidVersion):
        return ""


def _differs_from_base(analysis: Analysis, torches: list[TorchInstall]) -> Iterator[Hit]:
    chain = set(analysis.build.final_chain)
    for torch in torches:
        if torch.run.stage.index not in chain:
            continue
        root = analysis.build.root_base(torch.run.stage)
        base = base_cuda(root)
        cuda = _torch_cuda(torch)
        if base is None or base.cuda is None or cuda is None:
            continue
        base_version = Version.parse(base.cuda)
        if cuda.major_minor() == base_version.major_minor():
            continue
        if cuda > base_version:
            message = (
                f"{torch.shown} bundles CUDA {cuda} on a CUDA {base.cuda} base: two CUDA "
                f"runtimes, and the driver must support {cuda}{_min_driver(cuda)}, "
                f"not the {base.cuda} the image declares"
            )
            severity = None
        else:
            message = (
                f"{torch.shown} bundles CUDA {cuda} on a CUDA {base.cuda} base: two CUDA "
                "runtimes in one image"
            )
            severity = Severity.NOTE
        args = _disagreeing_args(
            torch, root.from_instruction.args[0] if root.from_instruction.args else ""
        )
        if args:
            message += f"; ARGs {args} disagree"
        yield torch.hit("GSL502", message, severity)


def _disagreeing_args(torch: TorchInstall, from_text: str) -> str:
    from_vars = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", from_text))
    raw = torch.command.source.value
    torch_vars = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", raw)) - from_vars
    if from_vars and torch_vars:
        return " and ".join(sorted(from_vars)[:1] + sorted(torch_vars)[:1])
    return ""


def _twice(analysis: Analysis, torches: list[TorchInstall]) -> Iterator[Hit]:
    """GSL503: CUDA libraries from the base image and again from pip wheels, with their size."""
    if not analysis.build.final_chain:
        return
    root = analysis.build.root_base(analysis.build.stages[analysis.build.target])
    base = base_cuda(root)
    if base is None or base.source != "nvidia/cuda" or base.flavor not in ("runtime", "devel"):
        return
    held = image_libraries((base.flavor, "cudnn") if base.cudnn else (base.flavor,))
    chain = set(analysis.build.final_chain)
    for torch in torches:
        if torch.run.stage.index in chain and _cuda_build(torch):
            cuda = _torch_cuda(torch)
            recorded = library_wheels(cuda.major) if cuda else None
            what = f"{torch.shown}'s CUDA wheels install"
            message, severity = _duplicate(what, base, root.base, recorded, held)
            yield torch.hit("GSL503", message, severity)
            return
    for run in final_runs(analysis):
        for command in run.commands:
            install = run.python_install(command)
            for spec in install.specs if install else ():
                match = _NVIDIA_WHEEL.match(spec.name)
                if match is None or spec.word is None or match.group(1) not in held:
                    continue
                major = int(match.group(2) or 13)  # CUDA 13 wheels dropped the -cuXX suffix
                recorded = library_wheels(major)
                message, severity = _duplicate(
                    f"{spec.name} installs", base, root.base, recorded, {match.group(1)}
                )
                yield at_word("GSL503", message, run, command, spec.word, severity=severity)
                return


def _cuda_build(torch: TorchInstall) -> bool:
    """True when the torch installed is a CUDA build, whichever index supplies it."""
    if torch.unknown:
        candidates = torch.indexes.candidates
        return bool(candidates) and all(v.startswith("cu") for v in candidates)
    return torch.variant is None or torch.variant.startswith("cu")


def _duplicate(
    what: str,
    base: BaseCuda,
    image: str,
    recorded: LibraryWheels | None,
    libraries: frozenset[str] | set[str],
) -> tuple[str, Severity | None]:
    """The GSL503 message and severity: a warning once the duplicated wheels reach 1 GB."""
    flavor = f"{base.flavor}{' + cuDNN' if base.cudnn else ''}"
    message = f"{what} CUDA libraries again on top of the CUDA {flavor} libraries of {image}"
    wheels = [w for w in recorded.wheels if w.library in libraries] if recorded else []
    if recorded is None or not wheels:
        return f"{message} (their size is unknown to gpuship)", None
    total = sum(w.size_mb for w in wheels)
    biggest = sorted(wheels, key=lambda w: -w.size_mb)[:4]
    parts = ", ".join(f"{w.library} {w.size_mb:.0f} MB" for w in biggest)
    more = ", ..." if len(wheels) > len(biggest) else ""
    message += (
        f": about {_size(total)} of wheels to download ({parts}{more}; CUDA "
        f"{recorded.cuda_major} wheel sizes as {recorded.pinned_by.split(' (')[0]} pins them), "
        "more once unpacked"
    )
    return message, Severity.WARNING if total >= LARGE_DUPLICATE_MB else None


def _size(mb: float) -> str:
    return f"{mb / 1000:.1f} GB" if mb >= 1000 else f"{mb:.0f} MB"


def _require_env(analysis: Analysis, torches: list[TorchInstall]) -> Iterator[Hit]:
    chain = set(analysis.build.final_chain)
    # The newest CUDA a torch of the image bundles: the same for every stage of the chain.
    bundled = max(
        (c for t in torches if t.run.stage.index in chain and (c := _torch_cuda(t))), default=None
    )
    for stage in analysis.final_stages():
        base = base_cuda(analysis.build.root_base(stage))
        highest = Version.parse(base.cuda) if base and base.cuda else None
        if bundled is not None and (highest is None or bundled > highest):
            highest = bundled
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            if instruction.keyword != "ENV":
                continue
            for name, raw in env_pairs(instruction):
                # ENV expands ARGs (`cuda>=${CUDA_MAJOR}.0`): judge the value the image gets;
                # one that waits on a --build-arg is unknown here, not invalid.
                value, known = expand_word(raw, state.env)
                if not known:
                    continue
                if name == "NVIDIA_DISABLE_REQUIRE" and go_parse_bool(value):
                    yield at_instruction(
                        "GSL504",
                        "NVIDIA_DISABLE_REQUIRE turns off the "
                        "runtime's driver check; hosts with too old a driver "
                        "fail mid-job instead",
                        instruction,
                        stage,
                        name,
                    )
                if name.startswith("NVIDIA_REQUIRE_") and not name.startswith(
                    "NVIDIA_REQUIRE_JETPACK"
                ):
                    try:
                        validate_expression(value, name)
                    except InvalidRequirement as error:
                        yield at_instruction("GSL507", str(error), instruction, stage, name)
                        continue
                if name == "NVIDIA_REQUIRE_CUDA" and highest is not None:
                    stated = [Version.parse(v) for v in _REQUIRE_CUDA.findall(value)]
                    if stated and min(stated) < highest:
                        yield at_instruction(
                            "GSL505",
                            f"NVIDIA_REQUIRE_CUDA admits cuda>={min(stated)} but the image "
                            f"carries CUDA {highest}{_min_driver(highest)}",
                            instruction,
                            stage,
                            name,
                        )


def _arch_list(analysis: Analysis) -> Iterator[Hit]:
    """GSL506: kernels built for the build machine's GPU instead of a stated list.

    Judged only on bases whose environment is known: nvidia/cuda and pytorch/pytorch set no
    TORCH_CUDA_ARCH_LIST (base_cuda's `arch_list`); NGC images have set one, and on any other
    base what its environment holds is unknown, so nothing is said."""
    clones: Clones = {}  # a stage's clones, read once: a build step asks for each of its RUNs
    for run in reachable_runs(analysis):
        base = base_cuda(analysis.build.root_base(run.stage))
        if base is None or base.arch_list is not False:
            continue
        for command in run.commands:
            env = run.env_at(command)
            if command.name == "nvcc":
                if not any(
                    w.text.startswith(
                        ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code")
                    )
                    for w in command.words
                ):
                    yield at_word(
                        "GSL506",
                        "nvcc without -arch/-gencode compiles for its default target only",
                        run,
                        command,
                        command.words[0],
                    )
                continue
            native = _ggml_native_build(run, command, env)
            if native is not None:
                yield native
                continue
            if env.get("TORCH_CUDA_ARCH_LIST") or "TORCH_CUDA_ARCH_LIST" in env:
                continue
            word = _extension_build(analysis, clones, run, command)
            if word is not None:
                yield at_word(
                    "GSL506",
                    "CUDA extensions built without TORCH_CUDA_ARCH_LIST are compiled for the "
                    "GPUs torch finds on the build machine, not for your fleet's; on a builder "
                    "with no GPU torch's cpp_extension finds none and the build fails "
                    "(pytorch/pytorch#137261)",
                    run,
                    command,
                    word,
                )


def _ggml_native_build(run: Run, command: Command, env: Env) -> Hit | None:
    """llama-cpp-python built with `CMAKE_ARGS=-DGGML_CUDA=on` and no arch list: ggml sets
    CMAKE_CUDA_ARCHITECTURES to `native` while GGML_NATIVE is on, its default unless
    cross-compiling or SOURCE_DATE_EPOCH is set (ggml/src/ggml-cuda/CMakeLists.txt and
    ggml/CMakeLists.txt; native since ggml-org/llama.cpp#10320, 2024-11). Only the newest
    release is judged: which ggml an older pinned release vendors is unknown to gpuship."""
    install = run.python_install(command)
    if install is None or install.tool not in ("pip", "uv"):
        return None
    spec = next(
        (
            s
            for s in install.specs
            if s.name == "llama-cpp-python"
            or (s.kind == "vcs" and "llama-cpp-python" in s.text.lower())
        ),
        None,
    )
    if spec is None or spec.word is None or (spec.pinned and spec.kind == "name"):
        return None
    if spec.kind == "vcs" and spec.pinned:
        return None
    cmake_args = env.get("CMAKE_ARGS")
    if not cmake_args or not _GGML_CUDA_ON.search(cmake_args):
        return None
    if (
        "CMAKE_CUDA_ARCHITECTURES" in cmake_args
        or _GGML_NATIVE_OFF.search(cmake_args)
        or "CMAKE_SYSTEM_NAME" in cmake_args
        or "CUDAARCHS" in env
        or "SOURCE_DATE_EPOCH" in env
    ):
        return None
    return at_word(
        "GSL506",
        "llama-cpp-python builds ggml's CUDA kernels with CMAKE_CUDA_ARCHITECTURES=native "
        "(GGML_NATIVE is on by default): for the GPU of the build machine only, and a GPU-less "
        "builder has none to target",
        run,
        command,
        spec.word,
        fix="Add `-DCMAKE_CUDA_ARCHITECTURES=80;86;90` (your fleet's) or `-DGGML_NATIVE=OFF` "
        "(ggml's portable default list) to CMAKE_ARGS.",
    )


def compiles_at_install(spec: Spec) -> bool:
    """True when installing `spec` compiles CUDA kernels (or fetches a prebuilt one in their
    place): a source-only CUDA project by name, or a CUDA project from a git URL. A wheel file
    or wheel URL compiles nothing."""
    lowered = spec.text.lower()
    if lowered.split("?", 1)[0].endswith(".whl"):
        return False
    if spec.kind == "name":
        return spec.name.replace("_", "-") in {p.replace("_", "-") for p in _SOURCE_RELEASES}
    if spec.kind == "vcs":
        return _project_of(lowered) in (*_SOURCE_RELEASES, *_TORCH_ARCH_PROJECTS)
    return False


def _project_of(url: str) -> str:
    """`git+https://github.com/NVIDIA/apex.git@v1#egg=apex` -> `apex`."""
    path = url.split("://", 1)[-1].split("#", 1)[0].split("@", 1)[0]
    return path.rstrip("/").removesuffix(".git").rsplit("/", 1)[-1]


def _extension_build(analysis: Analysis, clones: Clones, run: Run, command: Command) -> Word | None:
    """The word of a build that compiles CUDA code with torch's cpp_extension: a local project
    whose setup.py uses CUDAExtension (a pure-Python one is not), a clone or git URL of a
    project known to, or `--no-binary` for one of them."""
    argv = command.argv
    if (
        command.name.startswith("python")
        and "setup.py" in argv
        and any(v in argv for v in ("install", "build_ext", "develop", "bdist_wheel"))
    ):
        setup = command.words[argv.index("setup.py")]
        return setup if _builds_cuda(analysis, clones, run, "setup.py") else None
    install = run.python_install(command)
    if install is None:
        return None
    no_binary = _no_binary(command)
    for spec in install.specs:
        if spec.word is None:
            continue
        if spec.kind == "vcs" and _project_of(spec.text.lower()) in _TORCH_ARCH_PROJECTS:
            return spec.word
        if (
            spec.kind == "name"
            and spec.name in _TORCH_ARCH_PROJECTS
            and (":all:" in no_binary or spec.name in no_binary)
        ):
            return spec.word
        if (
            spec.kind == "path"
            and not spec.text.lower().endswith((".whl", ".tar.gz", ".zip", ".tgz"))
            and _builds_cuda(analysis, clones, run, f"{spec.text.rstrip('/')}/setup.py")
        ):
            return spec.word
    return None


def _no_binary(command: Command) -> set[str]:
    """The projects `--no-binary` makes pip build from source (`:all:` for every one)."""
    found: set[str] = set()
    argv = command.argv
    for index, text in enumerate(argv):
        value = None
        if text.startswith("--no-binary="):
            value = text.split("=", 1)[1]
        elif text == "--no-binary" and index + 1 < len(argv):
            value = argv[index + 1]
        if value:
            found.update(v.strip().lower().replace("_", "-") for v in value.split(","))
    return found


def _builds_cuda(analysis: Analysis, clones: Clones, run: Run, setup_py: str) -> bool:
    """True when the setup.py the RUN sees compiles CUDA code: read through the COPY that
    brought it, or a git clone (earlier in the stage) of a project known to build kernels
    with torch's cpp_extension."""
    container = container_path(run.state.workdir, setup_py, run.state.env)
    source = analysis.context_source(run.stage, run.instruction, container)
    text = analysis.context.read_text(source) if source else None
    if text is not None:
        return bool(_CUDA_BUILD.search(text)) and not _OWN_ARCH_LIST.search(text)
    directory = container.rsplit("/", 1)[0] or "/"
    if run.stage.index not in clones:
        clones[run.stage.index] = _kernel_clones(analysis, run.stage)
    first = clones[run.stage.index].get(directory)
    return first is not None and first <= run.instruction.index


Clones = dict[int, dict[str, int]]  # stage -> directory -> the RUN of its first kernel clone


def _kernel_clones(analysis: Analysis, stage: Stage) -> dict[str, int]:
    """The directories `git clone`s of `stage` create with a project known to build kernels
    with torch's cpp_extension, each with the first such RUN (instruction index): a RUN sees
    the clones of its stage's earlier RUNs and its own."""
    found: dict[str, int] = {}
    for other in analysis.runs_of(stage):
        for command in other.commands:
            argv = command.argv
            if command.name != "git" or "clone" not in argv:
                continue
            positional = [a for a in argv[argv.index("clone") + 1 :] if not a.startswith("-")]
            positional = [a for a in positional if a not in _option_values(argv)]
            if not positional or _project_of(positional[0].lower()) not in _TORCH_ARCH_PROJECTS:
                continue
            url = positional[0]
            name = url.rstrip("/").removesuffix(".git").rsplit("/", 1)[-1]
            dest = positional[1] if len(positional) > 1 else name
            created = container_path(other.state.workdir, dest, other.env_at(command))
            found.setdefault(created, other.instruction.index)
    return found


def _option_values(argv: list[str]) -> set[str]:
    """Values of `git clone` options that take one (`--branch v1`, `--depth 1`)."""
    takes = ("-b", "--branch", "--depth", "-o", "--origin", "--reference", "-c", "--config")
    return {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in takes}


def _apt_packages(analysis: Analysis) -> Iterator[Hit]:
    """GSL509: apt CUDA library packages built for another CUDA than the base image's."""
    for run in reachable_runs(analysis):
        base = base_cuda(analysis.build.root_base(run.stage))
        if base is None or base.cuda is None:
            continue
        base_version = Version.parse(base.cuda)
        for command in run.commands:
            install = os_install(command)
            if install is None or install.manager != "apt":
                continue
            env = run.env_at(command)
            for word in install.packages:
                text, known = expand(word.text, env)
                built_for = _apt_cuda(text) if known else None
                if built_for is None:
                    continue
                # A `+cudaX.Y` build of a library (cuDNN, NCCL) runs on any CUDA X minor
                # (CUDA's minor version compatibility: libcudnn8 8.9.7's only CUDA 12 build is
                # +cuda12.2); a `-X-Y` package is toolkit X.Y itself.
                library_build = _APT_CUDA_SUFFIX.search(text.partition("=")[2])
                compared = built_for.split(".", 1)[0] if library_build else built_for
                if _same_cuda(compared, base_version):
                    continue
                yield at_word(
                    "GSL509",
                    f"{text} is built for CUDA {built_for}, the base image "
                    f"{analysis.build.root_base(run.stage).base} has CUDA {base.cuda}",
                    run,
                    command,
                    word,
                )


def _cudnn_stacks(analysis: Analysis, torches: list[TorchInstall]) -> dict[int, str]:
    """The image's cuDNN majors, each with what brings it: a `cudnn9` base tag, or the cuDNN
    torch's PyPI wheel pins (from the knowledge base)."""
    chain = set(analysis.build.final_chain)
    stacks: dict[int, str] = {}
    if chain:
        root = analysis.build.root_base(analysis.build.stages[analysis.build.target])
        reference = image_reference(root)
        tag = reference.tag if reference is not None and reference.tag else ""
        for token in re.split(r"[-_.]", tag.lower()):
            if re.fullmatch(r"cudnn\d+", token):
                stacks[int(token[5:])] = f"the {token} base image {root.base}"
    for torch in torches:
        release = release_of(torch.version)
        if (
            torch.run.stage.index in chain
            and release is not None
            and release.cudnn_major is not None
            and not torch.unknown
            and torch.variant in (None, release.pypi_default)
        ):
            stacks.setdefault(release.cudnn_major, torch.shown)
    return stacks


def _apt_cuda(package: str) -> str | None:
    """The CUDA an apt package is built for: `+cuda12.2` in its version, `-12-2` or `-cuda-12`
    in its name ("12.2", "12"); None when it states none (cuda-compat is meant for another)."""
    name, _, version = package.partition("=")
    suffix = _APT_CUDA_SUFFIX.search(version)
    if suffix:
        return f"{suffix.group(1)}.{suffix.group(2)}"
    if name.startswith("cuda-compat"):
        return None  # forward compatibility: a newer CUDA on purpose
    match = _APT_CUDA_NAME.match(name)
    if match is None:
        return None
    if match.group(3):
        return match.group(3)
    return f"{match.group(1)}.{match.group(2)}"


def _same_cuda(built_for: str, base: Version) -> bool:
    """`12.2` must equal the base's major.minor; a major alone (`12`) its major."""
    wanted = Version.parse(built_for)
    if "." in built_for:
        return wanted == base.major_minor()
    return wanted.major == base.major
