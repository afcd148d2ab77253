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
    home_path,
    image_runs,
    removes,
)
from gpuship.lint.checks.leftovers import curl_short, output_path
from gpuship.lint.context import BuildContext, context_relative
from gpuship.lint.shell import SHELLS, Command, Word, expand_shell
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
    """GSL901-909: secrets in ARG/ENV, remote scripts piped to a shell, root user, no TLS checks,
    private keys copied in, passwordless sudo, package signatures off, signing keys over plain
    HTTP, SSH keys generated into the image."""
    if analysis.first_target:  # about the file's ARG/ENV lines, whatever the target
        yield from _secrets(analysis)
    yield from _piped_scripts(analysis)
    yield from _root_user(analysis)
    for run in executed_runs(analysis):
        pipelines = by_pipeline(run.commands)
        for command in run.commands:
            yield from _insecure_tls(run, command)
            yield from _unsigned_packages(run, command)
            yield from _key_over_http(run, command, pipelines[command.pipeline])
    yield from _keys_added_over_http(analysis)
    yield from _private_keys(analysis)
    yield from _passwordless_sudo(analysis)
    for run in image_runs(analysis):
        yield from _generated_keys(run)


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


# Package manager switches that install packages whose signature is missing or bad: apt-get(8)
# (`--force-yes` is the deprecated form that implies --allow-unauthenticated), apt.conf(5),
# apk's `--allow-untrusted`, dnf/yum `--nogpgcheck`, rpm `--nosignature`.
_UNSIGNED = {
    "apt": frozenset({"--allow-unauthenticated", "--allow-insecure-repositories", "--force-yes"}),
    "apk": frozenset({"--allow-untrusted"}),
    "dnf": frozenset({"--nogpgcheck"}),
    "rpm": frozenset({"--nosignature"}),
}
_MANAGER = {"apt-get": "apt", "apt": "apt", "aptitude": "apt", "apk": "apk", "rpm": "rpm"} | {
    name: "dnf" for name in ("dnf", "dnf5", "yum", "microdnf", "tdnf")
}
# apt `-o` settings that do the same (apt.conf(5)); dnf's `--setopt=gpgcheck=0`.
_UNSIGNED_SETTING = re.compile(
    r"(?i)^(APT::Get::AllowUnauthenticated|Acquire::AllowInsecureRepositories|"
    r"Acquire::AllowDowngradeToInsecureRepositories|(?:[\w.*-]+\.)?gpgcheck)="
    r"(?P<value>\S*)$"
)
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
# A sources.list entry that trusts its repository unsigned: `deb [trusted=yes] http://...`.
_TRUSTED_SOURCE = re.compile(r"\bdeb(?:-src)?\s+\[[^\]]*\btrusted=yes\b")


def _unsigned_packages(run: Run, command: Command) -> Iterator[Hit]:
    """GSL907: a package install told to accept packages without a valid signature, or an apt
    source written as trusted (`echo "deb [trusted=yes] ..." > /etc/apt/sources.list.d/x`)."""
    found = _unsigned_word(command)
    if found is not None:
        yield at_word(
            "GSL907",
            f"`{found.text}` turns package signature checks off: a mirror, or anyone on the "
            "network path, can serve this build other packages",
            run,
            command,
            found,
        )


def _unsigned_word(command: Command) -> Word | None:
    manager = _MANAGER.get(command.name)
    if manager is None:
        return next((w for w in command.words if _TRUSTED_SOURCE.search(w.text)), None)
    words = command.words[1:]
    for index, word in enumerate(words):
        option, _, value = word.text.partition("=")
        if option in _UNSIGNED[manager]:
            return word
        if option in ("-o", "--option", "--setopt"):
            # `--setopt=NAME=VALUE`, or `-o NAME=VALUE`: then the setting is the next word.
            setting = word if value or index + 1 == len(words) else words[index + 1]
            if _checks_off(value or setting.text):
                return setting
    return None


def _checks_off(setting: str) -> bool:
    """An apt `-o` or dnf `--setopt` setting that turns signature checks off."""
    match = _UNSIGNED_SETTING.match(setting)
    if match is None:
        return False
    value = match.group("value").lower()
    return value in (_FALSE if match.group(1).lower().endswith("gpgcheck") else _TRUE)


# Where trusted signing keys go: apt's keyrings and trusted.gpg.d, rpm's GPG keys.
_KEYRINGS = ("/etc/apt/trusted.gpg", "/etc/apt/keyrings", "/usr/share/keyrings", "/etc/pki/rpm-gpg")
_PLAIN_HTTP = re.compile(r"^http://", re.IGNORECASE)


def _key_over_http(run: Run, command: Command, pipeline: list[Command]) -> Iterator[Hit]:
    """GSL908: a signing key fetched over plain HTTP and trusted: `curl http://.../key | apt-key
    add -` (or into gpg, a keyring file), `apt-key adv --fetch-keys http://...`, `rpm --import
    http://...`."""
    argv = command.argv
    url = next((w for w in command.words[1:] if _PLAIN_HTTP.match(w.text)), None)
    if url is None:
        return
    trusted = False
    if command.name in ("curl", "wget"):
        later = [c for c in pipeline if c.position > command.position]
        output = output_path(command) or ""
        trusted = any(_trusts_key(c) for c in later) or output.startswith(_KEYRINGS)
    elif command.name == "apt-key":
        trusted = "--fetch-keys" in argv
    elif command.name == "rpm":
        trusted = "--import" in argv
    if trusted:
        yield at_word(
            "GSL908",
            f"`{url.text}` is fetched over plain HTTP and trusted as a signing key: anyone on "
            "the network path can put theirs in its place, then sign the packages",
            run,
            command,
            url,
        )


def _trusts_key(command: Command) -> bool:
    """A command that takes a key on its input into a trust store (apt-key add, gpg
    --import/--dearmor, tee into a keyring)."""
    argv = command.argv
    if command.name == "apt-key":
        return "add" in argv
    if command.name in ("gpg", "gpg2"):
        return "--import" in argv or "--dearmor" in argv
    return command.name == "tee" and any(a.startswith(_KEYRINGS) for a in argv[1:])


def _keys_added_over_http(analysis: Analysis) -> Iterator[Hit]:
    """GSL908 for `ADD http://.../key.gpg /usr/share/keyrings/`."""
    for stage in analysis.reachable_stages:
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            if (
                instruction.keyword != "ADD"
                or instruction.flag("checksum")
                or len(instruction.args) < 2
            ):
                continue
            destination = expand_word(instruction.args[-1], state.env)[0]
            if not destination.startswith(_KEYRINGS):
                continue
            for raw in instruction.args[:-1]:
                if _PLAIN_HTTP.match(raw):
                    yield at_instruction(
                        "GSL908",
                        f"`ADD {raw}` fetches a signing key over plain HTTP into {destination}: "
                        "anyone on the network path can put theirs in its place",
                        instruction,
                        stage,
                        raw,
                    )


# ssh-keygen modes that read or convert keys and write no new private key (ssh-keygen(1)).
_KEYGEN_READS = frozenset(
    {"-l", "-F", "-R", "-y", "-e", "-i", "-L", "-Y", "-Q", "-H", "-D", "-k", "-p", "-c", "-B"}
)


def _generated_keys(run: Run) -> Iterator[Hit]:
    """GSL909: `ssh-keygen` writes a private key into the image (`-A`: the host keys; else the
    `-f` file, by default ~/.ssh/id_<type>), unless the RUN deletes it or writes it to a
    mount."""
    for command in run.commands:
        if command.name != "ssh-keygen":
            continue
        argv = command.argv
        if any(
            a in _KEYGEN_READS or (a[:2] in _KEYGEN_READS and len(a) > 2 and a[1] != "-")
            for a in argv[1:]
        ):
            continue
        env = run.env_at(command)
        if "-A" in argv:
            path, what = "/etc/ssh/ssh_host_", "the host keys (/etc/ssh/ssh_host_*)"
        else:
            file = argv[argv.index("-f") + 1] if "-f" in argv[:-1] else None
            kind = argv[argv.index("-t") + 1] if "-t" in argv[:-1] else "rsa"
            value, known = expand_shell(file, env) if file else (f"~/.ssh/id_{kind}", True)
            if not known:
                continue
            path = home_path(value, env)
            what = f"a private key ({path})"
        folder = posixpath.dirname(path)
        if run.has_mount_on(folder, kinds=("cache", "tmpfs", "bind")) or removes(
            run, paths=(path, folder), after=command
        ):
            continue
        yield at_word(
            "GSL909",
            f"`ssh-keygen` writes {what} into the image: every container of it holds the same "
            "private key, and anyone who pulls the image has it too",
            run,
            command,
            command.words[0],
        )


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
