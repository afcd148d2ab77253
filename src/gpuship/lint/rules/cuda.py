"""CUDA consistency: torch wheel variants vs the knowledge base and the base image, CUDA
libraries installed twice, NVIDIA_REQUIRE_* overrides, and arch lists for kernel builds.

Version facts (which variants a torch release publishes, minimum drivers) come from the
CUDA knowledge base (`gpuship.cuda`); a version it does not know is never guessed: the rule
stays silent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from gpuship.cuda.drivers import min_driver_for
from gpuship.cuda.errors import InvalidRequirement, InvalidVersion, UnknownVersion
from gpuship.cuda.require import go_parse_bool, validate_expression
from gpuship.cuda.torch import cuda_of_variant, torch_release
from gpuship.cuda.version import Version
from gpuship.lint.analysis import Analysis, Run
from gpuship.lint.packages import PythonInstall, Spec
from gpuship.lint.rules.base import Hit, at_instruction, at_word, final_runs, reachable_runs
from gpuship.lint.rules.cudabase import base_cuda
from gpuship.lint.shell import Command, Word
from gpuship.lint.stages import env_pairs, expand
from gpuship.report import Severity

_INDEX_VARIANT = re.compile(r"/whl/(?:nightly/|test/)?(cu\d+|cpu|rocm[\d.]+|xpu)\b")
_LOCAL_VARIANT = re.compile(r"\+(cu\d+|cpu|rocm[\d.]+)")
_REQUIRE_CUDA = re.compile(r"cuda\s*>=?\s*(\d+\.\d+)")
_CUDA_EXTENSIONS = (
    "flash-attn",
    "flash_attn",
    "apex",
    "mamba-ssm",
    "causal-conv1d",
    "auto-gptq",
    "exllamav2",
    "xformers",
    "deepspeed",
    "grouped_gemm",
    "transformer-engine",
    "transformer_engine",
)


@dataclass(frozen=True)
class TorchInstall:
    """A torch spec with the wheel variant it resolves to."""

    run: Run
    command: Command
    spec: Spec
    word: Word  # the torch argument
    version: str | None  # "2.6.0" when pinned
    variant: str | None  # "cu126", "cpu", ... None: the PyPI default
    variant_word: str | None  # the text that chose the variant (index URL, +local)


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL501-507: torch/CUDA consistency, NVIDIA_REQUIRE_* overrides, arch lists."""
    torches = list(_torch_installs(analysis))
    yield from _unpublished(torches)
    yield from _differs_from_base(analysis, torches)
    yield from _twice(analysis, torches)
    yield from _require_env(analysis, torches)
    yield from _arch_list(analysis)


def _torch_installs(analysis: Analysis) -> Iterator[TorchInstall]:
    for run in reachable_runs(analysis):
        for command in run.commands:
            env = run.env_at(command)
            install = run.python_install(command)
            if install is None:
                continue
            for spec in install.specs:
                if spec.name == "torch" and spec.word is not None:
                    yield _torch(run, command, install, spec, spec.word, env)


def _torch(
    run: Run,
    command: Command,
    install: PythonInstall,
    spec: Spec,
    word: Word,
    env: dict[str, str | None],
) -> TorchInstall:
    version = spec.version.split("+", 1)[0] if spec.version else None
    local = _LOCAL_VARIANT.search(spec.version or "")
    if local:
        return TorchInstall(run, command, spec, word, version, local.group(1), spec.text)
    sources = [w.text for w in install.index_urls]
    argv = command.argv
    if "--torch-backend" in argv and argv.index("--torch-backend") + 1 < len(argv):
        sources.append("/whl/" + argv[argv.index("--torch-backend") + 1])
    sources.extend(a.split("=", 1)[1] for a in argv if a.startswith("--torch-backend="))
    for name in (
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "UV_INDEX_URL",
        "UV_EXTRA_INDEX_URL",
        "UV_INDEX",
        "UV_DEFAULT_INDEX",
    ):
        value = env.get(name)
        if value:
            sources.append(value)
    backend = env.get("UV_TORCH_BACKEND")
    if backend:
        sources.append("/whl/" + backend)
    for source in sources:
        match = _INDEX_VARIANT.search(expand(source, env)[0])
        if match:
            return TorchInstall(run, command, spec, word, version, match.group(1), source)
    return TorchInstall(run, command, spec, word, version, None, None)


def _cuda(variant: str | None) -> Version | None:
    if variant is None or not variant.startswith("cu"):
        return None
    try:
        return cuda_of_variant(variant)
    except InvalidVersion:
        return None


def _unpublished(torches: list[TorchInstall]) -> Iterator[Hit]:
    for torch in torches:
        cuda = _cuda(torch.variant)
        if torch.version is None or cuda is None:
            continue
        try:
            release = torch_release(torch.version)
        except (UnknownVersion, InvalidVersion):
            continue
        if release.variant(cuda) is None:
            published = ", ".join(v.name for v in release.variants) or "none recorded"
            yield at_word(
                "GSL501",
                f"torch {torch.version} publishes no {torch.variant} wheel (published: "
                f"{published}); `{torch.variant_word}` cannot provide it",
                torch.run,
                torch.command,
                torch.word,
            )


def _torch_cuda(torch: TorchInstall) -> Version | None:
    """The CUDA a torch install bundles: its variant, else the release's PyPI default."""
    cuda = _cuda(torch.variant)
    if cuda is not None or torch.variant is not None or torch.version is None:
        return cuda
    try:
        default = torch_release(torch.version).pypi_default
    except (UnknownVersion, InvalidVersion):
        return None
    return _cuda(default)


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
        base = base_cuda(analysis.build.root_base(torch.run.stage))
        cuda = _torch_cuda(torch)
        if base is None or base.cuda is None or cuda is None:
            continue
        base_version = Version.parse(base.cuda)
        if cuda.major_minor() == base_version.major_minor():
            continue
        shown = f"torch{' ' + torch.version if torch.version else ''} ({torch.variant or 'PyPI'})"
        if cuda > base_version:
            message = (
                f"{shown} bundles CUDA {cuda} on a CUDA {base.cuda} base: two CUDA "
                f"runtimes, and the driver must support {cuda}{_min_driver(cuda)}, "
                f"not the {base.cuda} the image declares"
            )
            severity = None
        else:
            message = (
                f"{shown} bundles CUDA {cuda} on a CUDA {base.cuda} base: two CUDA "
                "runtimes in one image"
            )
            severity = Severity.NOTE
        root = analysis.build.root_base(torch.run.stage)
        args = _disagreeing_args(
            torch, root.from_instruction.args[0] if root.from_instruction.args else ""
        )
        if args:
            message += f"; ARGs {args} disagree"
        yield at_word("GSL502", message, torch.run, torch.command, torch.word, severity=severity)


def _disagreeing_args(torch: TorchInstall, from_text: str) -> str:
    from_vars = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", from_text))
    raw = torch.command.source.value
    torch_vars = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", raw)) - from_vars
    if from_vars and torch_vars:
        return " and ".join(sorted(from_vars)[:1] + sorted(torch_vars)[:1])
    return ""


def _twice(analysis: Analysis, torches: list[TorchInstall]) -> Iterator[Hit]:
    target = analysis.build.stages[analysis.build.target] if analysis.build.final_chain else None
    if target is None:
        return
    base = base_cuda(analysis.build.root_base(target))
    if base is None or base.source != "nvidia/cuda" or base.flavor not in ("runtime", "devel"):
        return
    chain = set(analysis.build.final_chain)
    for torch in torches:
        if torch.run.stage.index in chain and (
            torch.variant is None or torch.variant.startswith("cu")
        ):
            yield at_word(
                "GSL503",
                f"torch's CUDA wheels install cuBLAS/cuDNN/... again on top "
                f"of the CUDA {base.flavor} libraries of {analysis.build.root_base(target).base}",
                torch.run,
                torch.command,
                torch.word,
            )
            return
    for run in final_runs(analysis):
        for command in run.commands:
            install = run.python_install(command)
            for spec in install.specs if install else ():
                if re.match(r"^nvidia-.*-cu\d+$", spec.name) and spec.word is not None:
                    yield at_word(
                        "GSL503",
                        f"{spec.name} installs CUDA libraries the {base.flavor} base already has",
                        run,
                        command,
                        spec.word,
                    )
                    return


def _require_env(analysis: Analysis, torches: list[TorchInstall]) -> Iterator[Hit]:
    chain = set(analysis.build.final_chain)
    for stage in analysis.final_stages():
        base = base_cuda(analysis.build.root_base(stage))
        highest = Version.parse(base.cuda) if base and base.cuda else None
        for torch in torches:
            cuda = _torch_cuda(torch)
            if torch.run.stage.index in chain and cuda and (highest is None or cuda > highest):
                highest = cuda
        for instruction in stage.instructions:
            if instruction.keyword != "ENV":
                continue
            for name, value in env_pairs(instruction):
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
    for run in reachable_runs(analysis):
        base = base_cuda(analysis.build.root_base(run.stage))
        if base is None or base.flavor != "devel":
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
            if env.get("TORCH_CUDA_ARCH_LIST") or "TORCH_CUDA_ARCH_LIST" in env:
                continue
            word = _extension_build(run, command)
            if word is not None:
                yield at_word(
                    "GSL506",
                    "CUDA extensions built without TORCH_CUDA_ARCH_LIST "
                    "target the build machine's GPU (or none on a GPU-less builder)",
                    run,
                    command,
                    word,
                )


def _extension_build(run: Run, command: Command) -> Word | None:
    argv = command.argv
    if (
        command.name.startswith("python")
        and "setup.py" in argv
        and any(v in argv for v in ("install", "build_ext", "develop", "bdist_wheel"))
    ):
        return command.words[argv.index("setup.py")]
    install = run.python_install(command)
    if install is None:
        return None
    for spec in install.specs:
        lowered = spec.text.lower()
        if spec.word is not None and (
            any(lowered.startswith(e) or f"/{e}" in lowered for e in _CUDA_EXTENSIONS)
        ):
            return spec.word
    if "--no-build-isolation" in install.options:
        return command.words[0]
    return None
