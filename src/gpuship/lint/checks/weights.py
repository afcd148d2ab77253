"""Weights: model files copied into the image or downloaded while it builds."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from immutables import Map

from gpuship.dockerfile.source import Instruction, Text
from gpuship.lint import makefile
from gpuship.lint.analysis import Analysis, Run, container_path, file_text
from gpuship.lint.checks.base import (
    WEIGHT_SUFFIXES,
    Hit,
    at_word,
    executed_runs,
    home,
    home_path,
    is_python,
)
from gpuship.lint.checks.leftovers import output_path, working_dirs
from gpuship.lint.context import ContextFile
from gpuship.lint.shell import Command, ShellParser, Word, expand_shell
from gpuship.lint.stages import Env, Stage, State, expand_word
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
    """A weights download found in a RUN: where, what it fetches, and where the files land
    in the stage (None: not known)."""

    run: Run
    hit: Hit
    lands: str | None = None


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL201/202: weights copied into the image or downloaded at build time."""
    yield from _copies(analysis)
    for download in downloads(analysis):
        yield download.hit


def is_weight_path(path: str) -> bool:
    return path.lower().endswith(WEIGHT_SUFFIXES)


def _copies(analysis: Analysis) -> Iterator[Hit]:
    minimum = int(analysis.config.weights_min_mib * 1024 * 1024)
    landings = _Landings(analysis)
    for stage in analysis.final_stages():
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            if instruction.keyword not in ("COPY", "ADD") or instruction.heredocs:
                continue
            sources = [expand_word(a, state.env)[0] for a in instruction.args[:-1]]
            from_stage = instruction.flag("from")
            for raw, source in zip(instruction.args[:-1], sources, strict=True):
                if from_stage is not None or source.lower().startswith(("http://", "https://")):
                    download = _download_under(analysis, landings, from_stage, state, source)
                    if download is not None:
                        yield _copy_hit(
                            instruction,
                            stage,
                            raw,
                            f"--from={from_stage} {source}",
                            [],
                            f" (the model that stage downloads at line "
                            f"{download.run.instruction.start_line})",
                        )
                    elif is_weight_path(source) or posixpath.basename(source) in _MODEL_DIRS:
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
    instruction: Instruction,
    stage: Stage,
    raw: str,
    source: str,
    weights: list[ContextFile],
    note: str = "",
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
        what = f"`{instruction.keyword} {source}` puts model weights into the image{note}"
    message = f"{what}; every pull carries them and a code change re-sends them"
    return Hit(
        "GSL201",
        message,
        instruction.locate(raw, instruction.body_offset),
        instruction,
        stage,
        fix=FIX,
    )


def downloads(analysis: Analysis) -> tuple[Download, ...]:
    """Every build-time weights download in the RUNs the target build executes: found once
    per target (`Analysis.per_target`) for the three checks that read them."""
    return analysis.per_target(_all_downloads)


def _all_downloads(analysis: Analysis) -> tuple[Download, ...]:
    return tuple(_downloads(analysis))


def _downloads(analysis: Analysis) -> Iterator[Download]:
    for run in executed_runs(analysis):
        commands = list(run.commands)
        for command, cwd in zip(commands, working_dirs(run, commands), strict=True):
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
                yield Download(run, hit, _lands(run, command))
            elif (
                fetch := _script_fetch(analysis, run, command, _cwd(run, command, cwd))
            ) is not None:
                hit = at_word(
                    "GSL202",
                    f"`{fetch.script}` calls {fetch.call}() at build time: the model lands in a "
                    "layer and downloads again whenever an earlier layer changes",
                    run,
                    command,
                    fetch.word,
                    fix=FIX,
                )
                yield Download(run, hit, fetch.lands)
            elif command.name in ("make", "gmake"):
                yield from _make_download(analysis, run, command)
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


def _cwd(run: Run, command: Command, cwd: str | None) -> str | None:
    """Where a command looks for a script: the RUN's working directory as its `cd`s move it; a
    command in a script the RUN runs, from the WORKDIR (the script's own `cd`s are not read)."""
    return run.state.workdir if command.file is not None else cwd


@dataclass(frozen=True)
class _ScriptFetch:
    """A Python script from the context, run by a command, that fetches weights."""

    word: Word  # the script's word in the command
    script: str  # the command as shown: `python download.py`, `python -m tools.fetch`
    call: str  # what it calls: snapshot_download, urlretrieve...
    lands: str | None  # where the files land, when known


def _script_fetch(
    analysis: Analysis, run: Run, command: Command, cwd: str | None
) -> _ScriptFetch | None:
    """What the Python script `command` runs fetches: `python x.py`, `python -m pkg.mod`
    (pkg/mod.py or its __main__.py) or `./x.py`, read from the context at the path the working
    directory `cwd` (None: unknown) gives it."""
    target = _script_target(command)
    if target is None:
        return None
    word, shown, paths = target
    env = run.env_at(command)
    for path in paths:
        if cwd is None and not path.startswith("/"):
            return None
        container = container_path(cwd or "/", path, env)
        source = analysis.context_source(run.stage, run.instruction, container)
        text = analysis.context.read_text(source) if source else None
        if text is None:
            continue
        call = python_fetch(text)
        if call is None:
            return None
        base = cwd or run.state.workdir
        return _ScriptFetch(word, shown, call, _python_lands(env, base, text, call))
    return None


def _script_target(command: Command) -> tuple[Word, str, list[str]] | None:
    """The word naming the script a command runs, the command as shown, and the paths the
    script may be at."""
    words = command.words
    if command.name.endswith(".py"):
        return words[0], words[0].text, [words[0].text]
    if not is_python(command):
        return None
    index = 1
    while index < len(words):
        text = words[index].text
        if text == "-m" and index + 1 < len(words):
            module = words[index + 1]
            path = module.text.replace(".", "/")
            shown = f"{command.name} -m {module.text}"
            return module, shown, [path + ".py", path + "/__main__.py"]
        if text == "-c" or not text.startswith("-"):
            break
        index += 2 if text in ("-W", "-X") else 1
    if index < len(words) and words[index].text.endswith(".py"):
        word = words[index]
        return word, f"{command.name} {word.text}", [word.text]
    return None


# `urllib.request.urlretrieve(URL, FILE)` of a weight file (a weight suffix, a Hub /resolve/ URL).
_URLRETRIEVE = re.compile(r"\burlretrieve\s*\(([^)]*)\)")
_QUOTED = re.compile(r"""["']([^"'$]+)["']""")


def python_fetch(text: str) -> str | None:
    """The call by which Python code fetches weights (snapshot_download, from_pretrained,
    urlretrieve of a weight file...), or None."""
    found = _fetch_at(text)
    return found[0] if found else None


def _fetch_at(text: str) -> tuple[str, int] | None:
    """python_fetch's call with where it stands in `text`."""
    match = _PY_DOWNLOAD.search(text)
    if match:
        return match.group(1), match.start(1)
    for call in _URLRETRIEVE.finditer(text):
        arguments = call.group(1).lower()
        if "/resolve/" in arguments or any(
            q.lower().endswith(WEIGHT_SUFFIXES) for q in _QUOTED.findall(call.group(1))
        ):
            return "urlretrieve", call.start()
    return None


def _python_text(run: Run, text: Text) -> Iterator[Download]:
    found = _fetch_at(text.value)
    if found is not None:
        call, at = found
        span = text.span(at, at + len(call))
        hit = Hit(
            "GSL202",
            f"{call}() runs at build time: the model lands in a layer "
            "and downloads again whenever an earlier layer changes",
            span,
            run.instruction,
            run.stage,
            fix=FIX,
        )
        env = run.state.env
        yield Download(run, hit, _python_lands(env, run.state.workdir, text.value, call))


_LOCAL_DIR = re.compile(r"""\b(?:local_dir|cache_dir)\s*=\s*["']([^"'$]+)["']""")


def hf_cache(env: Env) -> str:
    """Where huggingface_hub caches: HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache."""
    return env.get("HF_HUB_CACHE") or (
        f"{env.get('HF_HOME') or home(env) + '/.cache/huggingface'}/hub"
    )


def _lands(run: Run, command: Command) -> str | None:
    """Where a download command puts the files: hf `--local-dir`, the HF cache, wget/curl's
    output, a git clone's directory, ollama's model store."""
    env = run.env_at(command)
    argv = command.argv
    name = command.name
    target: str | None = None
    if name in ("huggingface-cli", "hf"):
        for option in ("--local-dir", "--cache-dir"):
            target = _option_value(argv, option) or target
        if target is None:
            return hf_cache(env)
    elif name == "ollama":
        return env.get("OLLAMA_MODELS") or home(env) + "/.ollama/models"
    elif name == "git" and "clone" in argv:
        positional = [a for a in argv[argv.index("clone") + 1 :] if not a.startswith("-")]
        if positional:
            target = (
                positional[1]
                if len(positional) > 1
                else posixpath.basename(positional[0].rstrip("/")).removesuffix(".git")
            )
    elif name in ("curl", "wget"):
        target = output_path(command)
    if target is None:
        return None
    value, known = expand_shell(target, env)
    if not known:
        return None
    return container_path(run.state.workdir, home_path(value, env), env)


def _python_lands(env: Env, cwd: str, text: str, call: str) -> str | None:
    """Where Python code puts what it fetches: `snapshot_download(local_dir="/models/x")`, the
    file `urlretrieve` writes, torch.hub's home, else the Hugging Face cache."""
    if call == "urlretrieve":
        retrieved = _URLRETRIEVE.search(text)
        quoted = _QUOTED.findall(retrieved.group(1)) if retrieved else []
        target = quoted[1] if len(quoted) > 1 else None
        return container_path(cwd, home_path(target, env), env) if target else None
    match = _LOCAL_DIR.search(text)
    if match:
        return container_path(cwd, home_path(match.group(1), env), env)
    if "torch.hub" in text:
        return env.get("TORCH_HOME") or home(env) + "/.cache/torch"
    return hf_cache(env)


def _option_value(argv: list[str], option: str) -> str | None:
    for index, text in enumerate(argv):
        if text == option and index + 1 < len(argv):
            return argv[index + 1]
        if text.startswith(option + "="):
            return text.split("=", 1)[1]
    return None


def _make_download(analysis: Analysis, run: Run, command: Command) -> Iterator[Download]:
    """A `make TARGET` whose Makefile recipe downloads weights (GSL202 at the `make`)."""
    made = make_recipes(analysis, run, command)
    if made is None:
        return
    found = analysis.per_file(_Makefiles).download(made.source, made.targets)
    if found is None:
        yield from _make_script_fetch(analysis, run, command, made)
        return
    recipe, inner, what = found
    hit = at_word(
        "GSL202",
        f"`make {recipe.target}` runs a recipe in which {what} ({made.source} line "
        f"{recipe.line}) at build time: the download lands in a layer and runs again "
        "whenever an earlier layer changes",
        run,
        command,
        made.word,
        fix=FIX,
    )
    yield Download(run, hit, _lands(run, _in_run(inner, command)))


def _make_script_fetch(
    analysis: Analysis, run: Run, command: Command, made: Made
) -> Iterator[Download]:
    """A `make TARGET` whose recipe runs a Python script of the context that fetches weights
    (the recipe runs in the Makefile's directory: `-C DIR`, else the working directory)."""
    directory = _option_value(command.argv, "-C") or "."
    cwd = container_path(run.state.workdir, directory, run.env_at(command))
    for recipe, inner in made.recipes:
        fetch = _script_fetch(analysis, run, inner, cwd)
        if fetch is not None:
            hit = at_word(
                "GSL202",
                f"`make {recipe.target}` runs `{fetch.script}` ({made.source} line "
                f"{recipe.line}), which calls {fetch.call}() at build time: the model lands in "
                "a layer and downloads again whenever an earlier layer changes",
                run,
                command,
                made.word,
                fix=FIX,
            )
            yield Download(run, hit, fetch.lands)
            return


@dataclass(frozen=True)
class Made:
    """What a `make` command of a RUN runs: its Makefile (a context path), targets and word."""

    source: str
    targets: tuple[str, ...]
    word: Word  # the first target named, else `make`
    recipes: tuple[tuple[makefile.Recipe, Command], ...]  # each recipe line's commands


def make_recipes(analysis: Analysis, run: Run, command: Command) -> Made | None:
    """The recipes a `make [-C DIR] [-f FILE] TARGET...` runs, read from the Makefile a COPY
    brought from the context; None for another command or a Makefile gpuship cannot read."""
    if command.name not in ("make", "gmake"):
        return None
    argv = command.argv
    directory = _option_value(argv, "-C") or "."
    names = [_option_value(argv, "-f")] if _option_value(argv, "-f") else list(_MAKEFILES)
    makefiles = analysis.per_file(_Makefiles)
    source = None
    for candidate in names:
        path = container_path(
            run.state.workdir, posixpath.join(directory, candidate or ""), run.env_at(command)
        )
        source = analysis.context_source(run.stage, run.instruction, path)
        if source is not None and makefiles.parsed(source) is not None:
            break
        source = None
    if source is None:
        return None
    values = {"-C", "-f", "-j", "--directory", "--file", "-I", "-o", "-W"}
    targets = tuple(
        a
        for i, a in enumerate(argv[1:], start=1)
        if not a.startswith("-") and "=" not in a and argv[i - 1] not in values
    )
    word = next((w for w in command.words[1:] if w.text in targets), command.words[0])
    recipes = tuple(
        (recipe, _in_run(inner, command)) for recipe, inner in makefiles.commands(source, targets)
    )
    return Made(source, targets, word, recipes)


_RecipeDownload = tuple[makefile.Recipe, Command, str]  # the recipe, its command, what it fetches


class _Makefiles:
    """The context's Makefiles, each read and parsed once per lint run (`Analysis.per_file`),
    the commands the recipes of each `make` target list run, and the first download among
    them, found once: two thousand `RUN make tN` read and parsed their 4,000-line Makefile six
    thousand times."""

    def __init__(self, analysis: Analysis) -> None:
        self._context = analysis.context
        self._parsed: dict[str, makefile.Makefile | None] = {}
        self._commands: dict[tuple[str, tuple[str, ...]], list[tuple[makefile.Recipe, Command]]]
        self._commands = {}
        self._found: dict[tuple[str, tuple[str, ...]], _RecipeDownload | None] = {}

    def parsed(self, source: str) -> makefile.Makefile | None:
        """The Makefile at context path `source`, or None when it cannot be read."""
        if source not in self._parsed:
            text = self._context.read_text(source)
            self._parsed[source] = None if text is None else makefile.Makefile.parse(text)
        return self._parsed[source]

    def commands(
        self, source: str, targets: tuple[str, ...]
    ) -> list[tuple[makefile.Recipe, Command]]:
        """Each command of the recipe lines `make targets` runs, with its recipe line."""
        key = (source, targets)
        if key not in self._commands:
            parsed = self.parsed(source)
            parser = ShellParser()
            self._commands[key] = [
                (recipe, inner)
                for recipe in (parsed.recipes(list(targets)) if parsed is not None else ())
                for inner in parser.parse(file_text(recipe.text)).commands
            ]
        return self._commands[key]

    def download(self, source: str, targets: tuple[str, ...]) -> _RecipeDownload | None:
        """The first recipe line `make targets` runs that downloads weights: the recipe, the
        command in it, and what it fetches."""
        key = (source, targets)
        if key not in self._found:
            self._found[key] = next(
                (
                    (recipe, inner, found[1])
                    for recipe, inner in self.commands(source, targets)
                    if (found := _command_download(inner)) is not None
                ),
                None,
            )
        return self._found[key]


_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")


def _in_run(inner: Command, make: Command) -> Command:
    """A recipe's command as if the RUN ran it (for its env and working directory)."""
    return Command(inner.words, inner.assignments, (), make.pipeline, 0, inner.source, make.file)


def _copied_from_stage(source: str) -> str:
    """The absolute path a `COPY --from` source names in that stage, without a trailing /."""
    return posixpath.normpath(source if source.startswith("/") else "/" + source).rstrip("/")


def _copied_depths(analysis: Analysis) -> set[int]:
    """How many "/" the paths that the final stages copy from other stages hold."""
    return {
        _copied_from_stage(expand_word(raw, state.env)[0]).count("/")
        for stage in analysis.final_stages()
        for instruction, state in zip(stage.instructions, stage.states, strict=True)
        if instruction.keyword in ("COPY", "ADD") and instruction.flag("from") is not None
        for raw in instruction.args[:-1]
    }


def _stage_indexes(analysis: Analysis) -> dict[str, int]:
    """The stage each `--from=` value names (a name, lowercased, or a number): the first in
    the file. Once per file (`Analysis.per_file`)."""
    found: dict[str, int] = {}
    for stage in analysis.stages:
        for key in (stage.name.lower() if stage.name else None, str(stage.index)):
            if key is not None:
                found.setdefault(key, stage.index)
    return found


@dataclass(frozen=True)
class _Landing:
    """A download that says where it lands, and how near it is in a FROM chain."""

    rank: tuple[int, int]  # (minus its stage's depth in the chain, its order there): least first
    download: Download


_Table = Map[tuple[bool, str], _Landing]  # (a directory above it?, path) -> the nearest download
_EMPTY: _Table = Map()


def _download_under(
    analysis: Analysis,
    landings: _Landings,
    from_stage: str | None,
    state: State,
    source: str,
) -> Download | None:
    """The download of stage `from_stage` that `COPY --from` takes."""
    if from_stage is None:
        return None
    index = copied_stage(analysis, from_stage, state)
    return None if index is None else landings.copied(index, _copied_from_stage(source))


def copied_stage(analysis: Analysis, from_stage: str, state: State) -> int | None:
    """The stage a `--from=` value names (a name or a number), or None for an image."""
    name = expand_word(from_stage, state.env)[0].lower()
    return analysis.per_file(_stage_indexes).get(name)


class _Landings:
    """Where the downloads of each stage's FROM chain land, indexed by path in persistent maps:
    a stage starts from its parent's map and adds its own downloads, the nearest winning. A
    `COPY --from` lookup then costs the depth of its path, not a walk of the chain and its
    downloads (a chain of a thousand stages each downloading a model, and a thousand copies).
    Each download is also filed under the directories above it at the depths of the copied
    paths, for a copy of a directory that holds it."""

    def __init__(self, analysis: Analysis) -> None:
        self._analysis = analysis

    @cached_property
    def _depths(self) -> set[int]:
        return _copied_depths(self._analysis)

    @cached_property
    def _tables(self) -> dict[int, _Table]:
        """Each stage's map, built for the first lookup."""
        own: dict[int, list[Download]] = {}
        for download in downloads(self._analysis):
            # What an ONBUILD trigger fetches lands in the images built FROM the stage, not in
            # the stage a `COPY --from` reads.
            if download.lands is not None and download.run.instruction.keyword == "RUN":
                own.setdefault(download.run.stage.index, []).append(download)
        tables: dict[int, _Table] = {}
        chain_depth: dict[int, int] = {}
        for stage in self._analysis.reachable_stages:  # a parent always comes earlier
            parent = stage.parent
            table = tables.get(parent, _EMPTY) if parent is not None else _EMPTY
            depth = chain_depth[stage.index] = (
                chain_depth.get(parent, -1) + 1 if parent is not None else 0
            )
            fetched = own.get(stage.index, [])
            if fetched:
                changed = table.mutate()
                for order in reversed(range(len(fetched))):  # the stage's first one wins
                    landing = _Landing((-depth, order), fetched[order])
                    lands = (fetched[order].lands or "").rstrip("/")
                    changed[(False, lands)] = landing
                    for directory in self._above(lands):
                        changed[(True, directory)] = landing
                table = changed.finish()
            tables[stage.index] = table
        return tables

    def _above(self, lands: str) -> Iterator[str]:
        """The directories above `lands` with as many "/" as some copied path."""
        end = 0
        for depth in range(1, max(self._depths, default=0) + 1):
            end = lands.find("/", end + 1)
            if end < 0:
                return
            if depth in self._depths:
                yield lands[:end]

    def copied(self, stage: int, path: str) -> Download | None:
        """The nearest download of `stage`'s chain that `COPY --from` of `path` takes: it
        copies the landing directory, something inside it, or a directory holding it."""
        table = self._tables.get(stage)
        if table is None or not path:
            return None  # `COPY --from=x / /`: not a model copy as such
        keys = [(False, path[:i]) for i, char in enumerate(path) if char == "/"]
        keys += [(False, path), (True, path)]
        found = [landing for key in keys if (landing := table.get(key)) is not None]
        return min(found, key=lambda landing: landing.rank).download if found else None
