"""Weights: model files copied into the image or downloaded while it builds."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from gpuship.dockerfile.source import Instruction, Text
from gpuship.lint.analysis import Analysis, Run, container_path
from gpuship.lint.checks.base import (
    WEIGHT_SUFFIXES,
    Hit,
    at_word,
    is_python,
    reachable_runs,
)
from gpuship.lint.context import ContextFile
from gpuship.lint.shell import Command
from gpuship.lint.stages import Stage, expand_word
from gpuship.units import human_size

_MODEL_DIRS = frozenset(
    {"models", "model", "checkpoints", "checkpoint", "weights", "ckpt", "ckpts"}
)
# Python calls that fetch weights when run (transformers, diffusers, sentence-transformers,
# huggingface_hub, torch.hub, timm/open_clip via HF).
_PY_DOWNLOAD = re.compile(
    r"\b(snapshot_download|hf_hub_download|from_pretrained|torch\.hub\.load|"
    r"torch\.hub\.download_url_to_file|load_state_dict_from_url|SentenceTransformer|"
    r"create_model_and_transforms|whisper\.load_model)\s*\("
)
FIX = (
    "fetch weights at container start into a mounted cache (e.g. HF_HOME on a volume), "
    "mount them as a volume, or ship them as a separate artifact"
)


@dataclass(frozen=True)
class Download:
    """A weights download found in a RUN: where, and what it fetches."""

    run: Run
    hit: Hit


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL201/202: weights copied into the image or downloaded at build time."""
    yield from _copies(analysis)
    for download in downloads(analysis):
        yield download.hit


def is_weight_path(path: str) -> bool:
    return path.lower().endswith(WEIGHT_SUFFIXES)


def _copies(analysis: Analysis) -> Iterator[Hit]:
    minimum = int(analysis.config.weights_min_mib * 1024 * 1024)
    for stage in analysis.final_stages():
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            if instruction.keyword not in ("COPY", "ADD") or instruction.heredocs:
                continue
            sources = [expand_word(a, state.env)[0] for a in instruction.args[:-1]]
            from_stage = instruction.flag("from")
            for raw, source in zip(instruction.args[:-1], sources, strict=True):
                if from_stage is not None or source.lower().startswith(("http://", "https://")):
                    if is_weight_path(source) or posixpath.basename(source) in _MODEL_DIRS:
                        origin = f"stage {from_stage}" if from_stage else "a URL"
                        yield _copy_hit(instruction, stage, raw, f"{source} from {origin}", [])
                    continue
                yield from _context_copy(analysis, instruction, stage, raw, source, minimum)


def _context_copy(
    analysis: Analysis,
    instruction: Instruction,
    stage: Stage,
    raw: str,
    source: str,
    minimum: int,
) -> Iterator[Hit]:
    context = analysis.context
    matched = context.match(source) if context.exists else []
    if not matched:
        if is_weight_path(source):
            yield _copy_hit(instruction, stage, raw, source, [])
        return
    weights: list[ContextFile] = []
    for item in matched:
        explicit = not context.is_dir(item)
        for file in context.files_under(item):
            if is_weight_path(file.path) and (explicit or file.size >= minimum):
                weights.append(file)
    if weights:
        yield _copy_hit(instruction, stage, raw, source, weights)


def _copy_hit(
    instruction: Instruction, stage: Stage, raw: str, source: str, weights: list[ContextFile]
) -> Hit:
    if weights:
        total = sum(w.size for w in weights)
        names = ", ".join(w.path for w in weights[:3]) + (" ..." if len(weights) > 3 else "")
        what = (
            f"`{instruction.keyword} {source}` puts {len(weights)} weight file(s) "
            f"({human_size(total)}: {names}) into the image"
        )
        if source in (".", "./"):
            what += "; exclude them in .dockerignore"
    else:
        what = f"`{instruction.keyword} {source}` puts model weights into the image"
    message = f"{what}; every pull carries them and a code change re-sends them"
    return Hit(
        "GSL201",
        message,
        instruction.locate(raw, instruction.body_offset),
        instruction,
        stage,
        fix=FIX,
    )


def downloads(analysis: Analysis) -> Iterator[Download]:
    """Every build-time weights download in the RUNs the target build executes."""
    for run in reachable_runs(analysis):
        for command in run.commands:
            found = _command_download(command)
            if found is not None:
                word_index, what = found
                hit = at_word(
                    "GSL202",
                    f"{what} at build time: the download lands in a layer and "
                    "runs again whenever an earlier layer changes",
                    run,
                    command,
                    command.words[word_index],
                    fix=FIX,
                )
                yield Download(run, hit)
            elif is_python(command):
                yield from _python_script(analysis, run, command)
        for text in run.python:
            yield from _python_text(run, text)


# CLIs whose subcommand fetches models (or Hub artifacts) into the layer.
_DOWNLOAD_CLIS = {
    "huggingface-cli": "download",
    "hf": "download",
    "kernels": "download",  # Hugging Face kernels: compiled kernels from the Hub
    "modelscope": "download",
    "tune": "download",  # torchtune
    "litgpt": "download",
    "ollama": "pull",
}


def _command_download(command: Command) -> tuple[int, str] | None:
    argv = command.argv
    name = command.name
    verb = _DOWNLOAD_CLIS.get(name)
    if verb is not None and verb in argv[1:]:
        what = "Hub kernels" if name == "kernels" else "a model"
        return 0, f"`{name} {verb}` fetches {what}"
    if name == "git" and "lfs" in argv and any(a in argv for a in ("pull", "fetch")):
        return 0, "`git lfs pull` fetches large files"
    if name == "git" and "clone" in argv:
        for index, word in enumerate(command.words):
            if "huggingface.co" in word.text:
                return index, f"`git clone {word.text}` clones a model repository"
    if name in ("curl", "wget"):
        for index, word in enumerate(command.words):
            url = word.text.lower().split("?")[0]
            if url.startswith("http") and (is_weight_path(url) or "/resolve/" in url):
                return index, f"{name} fetches {word.text}"
    return None


def _python_script(analysis: Analysis, run: Run, command: Command) -> Iterator[Download]:
    """A `python x.py` whose script (from the context) downloads weights."""
    for word in command.words[1:]:
        if word.text.startswith("-"):
            if word.text in ("-c", "-m"):
                return
            continue
        if not word.text.endswith(".py"):
            return
        container = container_path(run.state.workdir, word.text, run.state.env)
        source = analysis.context_source(run.stage, run.instruction, container)
        text = analysis.context.read_text(source) if source else None
        if text is None or source is None:
            return
        match = _PY_DOWNLOAD.search(text)
        if match:
            hit = at_word(
                "GSL202",
                f"`{command.name} {word.text}` calls {match.group(1)}() at build time: the model "
                "lands in a layer and downloads again whenever an earlier layer changes",
                run,
                command,
                word,
                fix=FIX,
            )
            yield Download(run, hit)
        return


def _python_text(run: Run, text: Text) -> Iterator[Download]:
    match = _PY_DOWNLOAD.search(text.value)
    if match:
        span = text.span(match.start(1), match.end(1))
        hit = Hit(
            "GSL202",
            f"{match.group(1)}() runs at build time: the model lands in a layer "
            "and downloads again whenever an earlier layer changes",
            span,
            run.instruction,
            run.stage,
            fix=FIX,
        )
        yield Download(run, hit)
