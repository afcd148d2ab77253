"""Security: secrets in ARG/ENV, remote scripts piped to a shell, root as the final user,
downloads with TLS certificate checks turned off."""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import posixpath
import re
from collections.abc import Iterator

from gpuship.dockerfile.source import Instruction
from gpuship.lint.analysis import Analysis, Run, parse_mount
from gpuship.lint.checks.base import (
    Hit,
    at_instruction,
    at_word,
    by_pipeline,
    context_copies,
    executed_runs,
    image_runs,
)
from gpuship.lint.checks.leftovers import curl_short
from gpuship.lint.context import BuildContext, context_relative
from gpuship.lint.shell import SHELLS, Command, Word
from gpuship.lint.stages import Stage, env_pairs, expand_word
from gpuship.report import Severity

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
        # What names, counts or times a credential is not one: SECRET_ID (a secret mount's id),
        # TOKEN_BUCKET_RATE, MAX_TOKENS... (AWS_ACCESS_KEY_ID names a key; its secret is
        # AWS_SECRET_ACCESS_KEY, still reported).
        "ID",
        "IDS",
        "RATE",
        "SIZE",
        "MAX",
        "MIN",
        "TIMEOUT",
        "TTL",
        "INTERVAL",
        "EXPIRY",
        "REGION",
        "VERSION",
        "MODE",
        "LEVEL",
        "PORT",
        "HOST",
    }
)
# Values that state no credential is set: vLLM's documented OPENAI_API_KEY=EMPTY, "dummy"...
# Weak real passwords (changeme, admin, secret) are credentials and stay reported.
_PLACEHOLDER_VALUES = frozenset(
    {"empty", "dummy", "none", "null", "nil", "placeholder", "unused", "unset", "not-needed"}
)
# `--mount=type=secret,id=${SECRET_ID}`: the ARG names the secret, it does not hold it.
_REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


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
    """GSL901-906: secrets in ARG/ENV, remote scripts piped to a shell, root user, no TLS checks,
    private keys copied in, passwordless sudo."""
    if analysis.first_target:  # about the file's ARG/ENV lines, whatever the target
        yield from _secrets(analysis)
    yield from _piped_scripts(analysis)
    yield from _root_user(analysis)
    for run in executed_runs(analysis):
        for command in run.commands:
            yield from _insecure_tls(run, command)
    yield from _private_keys(analysis)
    yield from _passwordless_sudo(analysis)


def _stage_of(analysis: Analysis, index: int) -> Stage | None:
    # Stages are in file order: a binary search, not a walk of all of them per ARG.
    stages = analysis.stages
    found = bisect.bisect_right(stages, index, key=lambda s: s.from_instruction.index)
    return stages[found - 1] if found else None


def _secrets(analysis: Analysis) -> Iterator[Hit]:
    first_from = next((i.index for i in analysis.parsed.instructions if i.keyword == "FROM"), None)
    mount_ids = _secret_mount_ids(analysis)
    for instruction in analysis.parsed.instructions:
        if instruction.keyword == "ARG" and (first_from is None or instruction.index < first_from):
            # An ARG before the first FROM is seen by FROM lines only; no RUN, and so no image
            # history, sees it unless a stage declares it again (that ARG is reported).
            continue
        if instruction.keyword == "ARG":
            names = [a.split("=", 1)[0] for a in instruction.args]
            pairs = [(n, "") for n in names if n not in mount_ids]
        elif instruction.keyword == "ENV":
            # The value with its quotes removed; variables stay as written.
            values = [(n, expand_word(v, {})[0]) for n, v in env_pairs(instruction)]
            pairs = [(n, v) for n, v in values if v]
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


def _secret_mount_ids(analysis: Analysis) -> set[str]:
    """The variables that name a secret mount's id anywhere in the file."""
    names: set[str] = set()
    for instruction in analysis.parsed.instructions:
        if instruction.keyword != "RUN":
            continue
        for spec in instruction.flag_values("mount"):
            mount = parse_mount(spec)
            if mount.type == "secret":
                names.update(_REFERENCE.findall(mount.options.get("id", "")))
    return names


def _switch_value(value: str) -> bool:
    """An ENV value such as 0/1/true/off sets a switch, and EMPTY/dummy says none is set: it
    cannot be a credential."""
    lowered = value.strip().lower()
    return value != "" and (lowered in _BOOLEAN_VALUES or lowered in _PLACEHOLDER_VALUES)


def _piped_scripts(analysis: Analysis) -> Iterator[Hit]:
    for run in executed_runs(analysis):
        commands = list(run.commands)
        pipelines = by_pipeline(commands)
        for command in commands:
            if command.name not in ("curl", "wget"):
                continue
            for other in pipelines[command.pipeline]:
                if other.position > command.position and (
                    other.name in SHELLS or other.name.startswith("python")
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
        return next(
            (w for w in words if w.text == "--insecure" or curl_short(w.text, "k") is not None),
            None,
        )
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


# OpenSSH's default private key names (ssh-keygen(1) FILES); `.pub` files are the public halves.
_SSH_KEY_NAMES = frozenset(
    {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk", "identity"}
)
# PEM and OpenSSH private key armour: `-----BEGIN (RSA |EC |DSA |OPENSSH |ENCRYPTED )PRIVATE KEY`.
_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")


def _private_keys(analysis: Analysis) -> Iterator[Hit]:
    """GSL905: a private key copied from the build context (or copied to `.ssh/id_*`)."""
    final = set(analysis.build.final_chain)
    for stage, instruction, state in context_copies(analysis.reachable_stages):
        args = [a for a in instruction.args if not a.startswith("<<")]
        if len(args) < 2 or instruction.heredocs:
            continue
        destination = expand_word(args[-1], state.env)[0]
        for raw in args[:-1]:
            hit = _key_copy(
                analysis,
                stage,
                instruction,
                raw,
                expand_word(raw, state.env)[0],
                destination,
                stage.index in final,
            )
            if hit is not None:
                yield hit


def _key_copy(
    analysis: Analysis,
    stage: Stage,
    instruction: Instruction,
    raw: str,
    source: str,
    destination: str,
    in_image: bool,
) -> Hit | None:
    context = analysis.context
    ssh = "/.ssh/" in f"/{destination.rstrip('/')}/" or "/.ssh/" in f"/{source}"
    found = _key_in(context, source, ssh) if context.exists else None
    # A key is a file: a directory source (`COPY identity/ /app/identity/`, a package) names none.
    is_file = not source.endswith("/") and not (context.exists and context.is_dir(source))
    named = is_file and (
        _names_key(source, ssh) or (not destination.endswith("/") and _names_key(destination, ssh))
    )
    if found is None and not named:
        return None
    # Named by the COPY (or copied into .ssh/), not swept in by a tree copy.
    explicit = (
        named
        or "/.ssh" in f"/{destination}"
        or (found is not None and found[0] == context_relative(source))
    )
    what = f"{found[0]}, a private key" if found else f"`{source}`, an SSH key name"
    where = "the image" if in_image else f"the layers of stage {stage.name or stage.index}"
    hit = at_instruction(
        "GSL905",
        f"`{instruction.keyword} {raw}` puts {what}, into {where}: whoever can read "
        "the layers can use it; mount it for the one RUN that needs it instead",
        instruction,
        stage,
        raw,
    )
    # Certain only for a key whose content was read, named by the COPY, and shipped.
    if not (found and found[1] and in_image and explicit):
        hit = dataclasses.replace(hit, severity=Severity.WARNING)
    return hit


def _names_key(path: str, ssh: bool) -> bool:
    """Whether a file path is named like an OpenSSH private key. `identity` (SSH protocol 1's
    name) is also an ordinary word: a key name only in a `.ssh/` directory (`ssh`: the COPY
    goes into or comes from one)."""
    name = posixpath.basename(path)
    if name == "identity":
        return ssh or "/.ssh/" in f"/{path}"
    return name in _SSH_KEY_NAMES


def _key_in(context: BuildContext, source: str, ssh: bool) -> tuple[str, bool] | None:
    """(the context path, whether its content is a private key) of the first private key the
    COPY source takes: a file with key armour, or one named like an SSH key (not `.pub`)."""
    for item in context.match(source):
        for file in context.files_under(item):
            name = posixpath.basename(file.path)
            if item != file.path and _TEST_DIRS & set(file.path.split("/")[:-1]):
                continue  # a test fixture swept in by a directory copy: published, not a secret
            key_name = _names_key(file.path, ssh)
            candidate = key_name or name.endswith(_KEY_SUFFIXES) or "/.ssh/" in f"/{file.path}"
            if not candidate or file.size > _KEY_MAX_BYTES:
                continue
            text = context.read_text(file.path)
            if text is not None and _PRIVATE_KEY.search(text[:4096]):
                return file.path, True
            if key_name:
                return file.path, False
    return None


# Directories of test data: keys there are fixtures the repository publishes.
_TEST_DIRS = frozenset({"test", "tests", "testdata", "test_data", "fixtures", "__tests__", "spec"})
_KEY_MAX_BYTES = 64 * 1024  # keys are a few KB; larger files are not read for armour
# Names whose content is read for key armour (other files of a `COPY .` are not opened).
_KEY_SUFFIXES = (".pem", ".key", "_rsa", "_ed25519", "_ecdsa", "_dsa", ".priv")
# `user ALL=(ALL) NOPASSWD: ALL`: any command as any user, without a password (sudoers(5)).
_NOPASSWD_ALL = re.compile(r"NOPASSWD\s*:\s*ALL\b")


def _passwordless_sudo(analysis: Analysis) -> Iterator[Hit]:
    """GSL906: a sudoers rule of the final image lets a user run everything as root without a
    password (written by a RUN, or a copied sudoers file)."""
    for run in image_runs(analysis):
        commands = list(run.commands)
        to_sudoers = any(
            w.text.startswith("/etc/sudoers")
            for c in commands
            for w in (*c.words, *(r.target for r in c.redirects))
        )
        if not to_sudoers:
            continue
        for command in commands:
            word = next((w for w in command.words if _NOPASSWD_ALL.search(w.text)), None)
            if word is not None:
                yield at_word(
                    "GSL906",
                    f"`{word.text.strip()}` in sudoers lets this user become root without a "
                    "password: a non-root USER then protects nothing",
                    run,
                    command,
                    word,
                )
                break
    yield from _copied_sudoers(analysis)


def _copied_sudoers(analysis: Analysis) -> Iterator[Hit]:
    context = analysis.context
    if not context.exists:
        return
    for stage, instruction, state in context_copies(analysis.final_stages()):
        args = instruction.args
        if len(args) < 2 or not expand_word(args[-1], state.env)[0].startswith("/etc/sudoers"):
            continue
        for raw in args[:-1]:
            for item in context.match(expand_word(raw, state.env)[0]):
                for file in context.files_under(item):
                    text = context.read_text(file.path) or ""
                    if any(
                        _NOPASSWD_ALL.search(line) and not line.lstrip().startswith("#")
                        for line in text.splitlines()
                    ):
                        yield at_instruction(
                            "GSL906",
                            f"{file.path} gives a user `NOPASSWD: ALL` in sudoers: it "
                            "becomes root without a password",
                            instruction,
                            stage,
                            raw,
                        )
