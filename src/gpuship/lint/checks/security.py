"""Security: secrets in ARG/ENV, remote scripts piped to a shell, root as the final user,
downloads with TLS certificate checks turned off."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from gpuship.dockerfile.source import Instruction
from gpuship.lint.analysis import Analysis, Run
from gpuship.lint.checks.base import Hit, at_instruction, at_word, reachable_runs
from gpuship.lint.shell import SHELLS, Command, Word
from gpuship.lint.stages import Stage, env_pairs

_SECRET_PARTS = frozenset({"TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY", "CREDENTIALS", "PAT"})
_SECRET_PAIRS = frozenset(
    {
        ("API", "KEY"),
        ("ACCESS", "KEY"),
        ("PRIVATE", "KEY"),
        ("SECRET", "KEY"),
        ("AUTH", "KEY"),
        ("SERVICE", "KEY"),
    }
)
_NOT_SECRET_SUFFIX = frozenset(
    {
        "FILE",
        "PATH",
        "DIR",
        "URL",
        "ENDPOINT",
        "NAME",
        "TYPE",
        "ENABLED",
        "LENGTH",
        "LIMIT",
        "COUNT",
        "HEADER",
        "URI",
    }
)


# Words that make a name a switch about credentials (SCCACHE_S3_NO_CREDENTIALS, USE_AUTH_TOKEN).
_SWITCH_PARTS = frozenset({"NO", "DISABLE", "DISABLED", "ENABLE", "USE", "SKIP", "IGNORE"})
# Values that are a switch, never a credential.
_BOOLEAN_VALUES = frozenset({"0", "1", "true", "false", "yes", "no", "on", "off", ""})


def is_secret_name(name: str) -> bool:
    """True for names like HF_TOKEN, WANDB_API_KEY, AWS_SECRET_ACCESS_KEY."""
    parts = [p for p in re.split(r"[_\-]", name.upper()) if p]
    if not parts or parts[-1] in _NOT_SECRET_SUFFIX or _SWITCH_PARTS & set(parts):
        return False
    if any(p in _SECRET_PARTS for p in parts):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(parts))


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL901-904: secrets in ARG/ENV, remote scripts piped to a shell, root user, no TLS checks."""
    yield from _secrets(analysis)
    yield from _piped_scripts(analysis)
    yield from _root_user(analysis)
    for run in reachable_runs(analysis):
        for command in run.commands:
            yield from _insecure_tls(run, command)


def _stage_of(analysis: Analysis, index: int) -> Stage | None:
    owner = None
    for stage in analysis.stages:
        if stage.from_instruction.index <= index:
            owner = stage
    return owner


def _secrets(analysis: Analysis) -> Iterator[Hit]:
    first_from = next((i.index for i in analysis.parsed.instructions if i.keyword == "FROM"), None)
    for instruction in analysis.parsed.instructions:
        if instruction.keyword == "ARG" and (first_from is None or instruction.index < first_from):
            # An ARG before the first FROM is seen by FROM lines only; no RUN, and so no image
            # history, sees it unless a stage declares it again (that ARG is reported).
            continue
        if instruction.keyword == "ARG":
            names = [a.split("=", 1)[0] for a in instruction.args]
            pairs = [(n, "") for n in names]
        elif instruction.keyword == "ENV":
            pairs = [(n, v) for n, v in env_pairs(instruction) if v]
        else:
            continue
        for name, value in pairs:
            if is_secret_name(name) and not _switch_value(value):
                stored = "image history" if instruction.keyword == "ARG" else "image config"
                yield at_instruction(
                    "GSL901",
                    f"{instruction.keyword} {name} puts a credential in the {stored}, readable "
                    "by anyone who pulls the image; use RUN --mount=type=secret",
                    instruction,
                    _stage_of(analysis, instruction.index),
                    name,
                )


def _switch_value(value: str) -> bool:
    """An ENV value such as 0/1/true/off sets a switch; it cannot be a credential."""
    return value != "" and value.strip().lower() in _BOOLEAN_VALUES


def _piped_scripts(analysis: Analysis) -> Iterator[Hit]:
    for run in reachable_runs(analysis):
        commands = list(run.commands)
        for command in commands:
            if command.name not in ("curl", "wget"):
                continue
            for other in commands:
                if (
                    other.pipeline == command.pipeline
                    and other.position > command.position
                    and (other.name in SHELLS or other.name.startswith("python"))
                ):
                    yield at_word(
                        "GSL902",
                        f"`{command.name} ... | {other.name}` runs whatever "
                        "the server returns, unverified",
                        run,
                        other,
                        other.words[0],
                    )
                    break
        for command in commands:
            if command.name in SHELLS and any(
                "$(curl" in w.text or "$(wget" in w.text for w in command.words
            ):
                yield at_word(
                    "GSL902",
                    f'`{command.name} -c "$(curl ...)"` runs whatever the '
                    "server returns, unverified",
                    run,
                    command,
                    command.words[0],
                )


def _root_user(analysis: Analysis) -> Iterator[Hit]:
    if not analysis.build.final_chain:
        return
    target = analysis.build.stages[analysis.build.target]
    user = target.final_state.user
    if user is None:
        yield at_instruction(
            "GSL903",
            "the final stage sets no USER: the image runs as root unless its base sets a user",
            target.from_instruction,
            target,
        )
        return
    if user.split(":", 1)[0] in ("root", "0"):
        last = next(i for i in reversed(_chain_instructions(analysis)) if i.keyword == "USER")
        yield at_instruction(
            "GSL903",
            f"the final USER is {user}: the image runs as root",
            last,
            _stage_of(analysis, last.index),
            user,
        )


def _chain_instructions(analysis: Analysis) -> list[Instruction]:
    result: list[Instruction] = []
    for index in reversed(analysis.build.final_chain):
        result.extend(analysis.build.stages[index].instructions)
    return result


# curl short options that take a value: in `-fsSLo out`, what follows `o` is its value.
_CURL_VALUE_LETTERS = frozenset("oXHduAebcmTwxyYzCEKrtUFQP")


def _insecure_tls(run: Run, command: Command) -> Iterator[Hit]:
    """GSL904: certificate checks turned off for a download."""
    word = _insecure_word(run, command)
    if word is not None:
        yield at_word(
            "GSL904",
            f"`{word.text}` turns TLS certificate checks off: anyone on the network path can "
            "serve this build another file",
            run,
            command,
            word,
        )


def _insecure_word(run: Run, command: Command) -> Word | None:
    words = command.words[1:]
    name = command.name
    if name == "curl":
        return next((w for w in words if w.text == "--insecure" or _curl_short_k(w.text)), None)
    if name == "wget":
        return next((w for w in words if w.text == "--no-check-certificate"), None)
    if name.startswith("pip") or name == "uv":
        flags = ("--trusted-host", "--allow-insecure-host")
        return next((w for w in words if w.text.split("=", 1)[0] in flags), None)
    if name == "git":
        for index, word in enumerate(words[:-1]):
            if word.text == "-c" and words[index + 1].text.lower() == "http.sslverify=false":
                return words[index + 1]
        # git: "Setting ... this environment variable to any value" skips verification.
        if run.env_at(command).get("GIT_SSL_NO_VERIFY") is not None:
            return command.words[0]
    return None


def _curl_short_k(text: str) -> bool:
    if not text.startswith("-") or text.startswith("--"):
        return False
    for letter in text[1:]:
        if letter == "k":
            return True
        if letter in _CURL_VALUE_LETTERS:
            return False
    return False
