"""What a package-manager command installs: pip, `python -m pip`, uv, conda/mamba/micromamba,
poetry, and the OS managers apt/dnf/yum/microdnf/apk; plus requirement and conda env files.

Requirement strings are judged with `packaging`: a pin is exactly one `==` without a
wildcard, or `===`. A value that still holds an unresolved build ARG is "decided at build
time" and never reported as unpinned.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuship.documents import load_toml
from gpuship.errors import InputError
from gpuship.lint.shell import Command, Word, expand_shell

if TYPE_CHECKING:
    import yaml

    from gpuship.lint.stages import Env

_PIP = re.compile(r"^pip[0-9.]*$")
_PYTHON = re.compile(r"^python[0-9.]*$")
_HEX_REF = re.compile(r"@([0-9a-fA-F]{7,40})(?:#|$)")
_VERSION_TAG = re.compile(r"^v?\d+(?:\.\d+)+(?:[-.+]?[A-Za-z0-9.]*)?$")
# A component's release tag: `core_v0.15.0` (Megatron-LM), `llvmorg-18.1.8`, `b4100`-style
# prefixes before a full x.y.z version. `release*` prefixes name branches (`release_v2.10`).
_PREFIXED_TAG = re.compile(
    r"^(?!rel)[A-Za-z][A-Za-z0-9]*[-_]v?\d+\.\d+\.\d+(?:[-.+]?[A-Za-z0-9.]*)?$"
)
# pip/uv/poetry options whose value is the next word (or after `=`): pip's own option table
# (`pip install/download/wheel` options that take a value, pip 23.2, plus `--resume-retries`,
# `--group` and `--build-constraint` of pip 25), `uv pip install` / `uv sync --help`, and
# `poetry install/add --help`.
_VALUE_OPTIONS = frozenset(
    [
        "--resume-retries",
        "--build-option",
        "--default-timeout",
        "--dest",
        "-d",
        "--use-feature",
        "--use-deprecated",
        "--local-log",
        "--log-file",
        "--cache-dir",
        "--python",
        "--constraints",
        "--requirements",
        "--overrides",
        "--build-constraints",
        "--reinstall-package",
        "--refresh-package",
        "--upgrade-package",
        "--no-build-package",
        "--no-binary-package",
        "--no-build-isolation-package",
        "--config-setting",
        "--exclude-newer-package",
        "--python-platform",
        "--only-group",
        "--no-group",
        "--package",
        "--no-install-package",
        "--allow-insecure-host",
        "--config-file",
        "--color",
        "-r",
        "--requirement",
        "-c",
        "--constraint",
        "-e",
        "--editable",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "-t",
        "--target",
        "--prefix",
        "--root",
        "--src",
        "--platform",
        "--python-version",
        "--implementation",
        "--abi",
        "--only-binary",
        "--no-binary",
        "--progress-bar",
        "--trusted-host",
        "--upgrade-strategy",
        "--cache-dir",
        "--log",
        "--timeout",
        "--retries",
        "--proxy",
        "--cert",
        "--client-cert",
        "--exists-action",
        "--global-option",
        "-C",
        "--config-settings",
        "--python",
        "-p",
        "--index",
        "--default-index",
        "--index-strategy",
        "--keyring-provider",
        "--resolution",
        "--prerelease",
        "--extra",
        "--group",
        "--override",
        "--build-constraint",
        "--exclude-newer",
        "--link-mode",
        "--torch-backend",
        "--report",
        "--root-user-action",
        # pipx install (`pipx install --help`)
        "--pip-args",
        "--suffix",
        "--spec",
        "--preinstall",
        "-n",
        "--name",
        "-c",
        "--channel",
        "--file",
        "--override-channels",
        "--repodata-fn",
        "--solver",
        # poetry
        "-E",
        "--extras",
        "--with",
        "--without",
        "--only",
        "-G",
        "--source",
        "--directory",
        "-P",
        "--project",
    ]
)
_CONDA_VALUE_OPTIONS = frozenset(
    [
        "-n",
        "--name",
        "-p",
        "--prefix",
        "-c",
        "--channel",
        "-f",
        "--file",
        "--repodata-fn",
        "--solver",
        "--override-channels",
        "--subdir",
        "--platform",
    ]
)


@dataclass(frozen=True)
class Spec:
    """One package argument or requirement line."""

    text: str
    word: Word | None  # where it is in the command (None for file lines)
    kind: str  # "name" | "path" | "vcs" | "url"
    pinned: bool
    name: str  # canonical-ish project name ("" for paths/urls)
    version: str | None  # the pinned version, when pinned with ==
    specifier: str = ""  # the version specifier as written (`>=2`), "" for a bare name
    extras: frozenset[str] = frozenset()  # `jax[cuda12]` -> {"cuda12"}


@dataclass(frozen=True)
class PythonInstall:
    """A pip/uv/conda/poetry command that installs Python packages."""

    tool: str  # "pip" | "uv" | "conda" | "poetry" | "pipx"
    command: Command
    verb: str  # install | sync | add | create | env
    specs: tuple[Spec, ...]
    requirement_files: tuple[Word, ...]
    constraint_files: tuple[Word, ...]
    env_files: tuple[Word, ...]  # conda env yml
    index_urls: tuple[Word, ...]
    options: frozenset[str]
    # The project interface (`uv sync`/`uv add`, `poetry install`), not `uv pip ...`.
    project: bool = False
    # Index URLs added beside the default one (`--extra-index-url`, `--find-links`), which pip
    # merges with PyPI: it takes the newest matching version from all of them.
    extra_index_urls: tuple[Word, ...] = ()
    # `--find-links`/`-f` locations: with `--no-index` the only place packages come from.
    find_links: tuple[Word, ...] = ()


def python_install(command: Command, env: Env) -> PythonInstall | None:
    """The install a command performs, or None when it installs no Python packages (a
    `--dry-run` resolves and installs nothing)."""
    install = _python_install(command, env)
    if install is not None and "--dry-run" in install.options:
        return None
    return install


def _python_install(command: Command, env: Env) -> PythonInstall | None:
    words = list(command.words)
    name = command.name
    if _PYTHON.match(name):
        texts = [w.text for w in words]
        if "-m" not in texts:
            return None
        index = texts.index("-m")
        if index + 1 >= len(words) or words[index + 1].text not in ("pip", "uv"):
            return None
        tool_word = words[index + 1].text
        words = words[index + 1 :]
        name = tool_word
    if _PIP.match(name):
        # pip's general options may come before the command: `pip --no-cache-dir install x`.
        found = _after_verb(words[1:], ("install", "wheel"))
        if found is None:
            return None
        before, rest = found
        return _pip_like("pip", command, "install", rest, env, before)
    if name == "uv":
        # uv's global options too: `uv --no-cache pip install x`.
        found = _after_verb(words[1:], ("pip", "sync", "add", "tool"))
        if found is None:
            return None
        before, rest = found
        verb = words[1 + len(before)].text
        if verb in ("sync", "add"):
            return _pip_like("uv", command, verb, rest, env, before, project=True)
        sub = rest[0].text if rest else ""
        if (verb == "pip" and sub in ("install", "sync")) or (verb == "tool" and sub == "install"):
            return _pip_like("uv", command, sub, rest[1:], env, before, sync_file=verb == "pip")
        return None
    if name in ("conda", "mamba", "micromamba"):
        return _conda(command, words, env)
    if name == "poetry" and len(words) >= 2 and words[1].text in ("add", "install"):
        return _pip_like("poetry", command, words[1].text, words[2:], env, project=True)
    if name == "pipx":
        return _pipx(command, words, env)
    return None


def _pipx(command: Command, words: list[Word], env: Env) -> PythonInstall | None:
    """`pipx install PACKAGE` (an application in its own venv). With `--spec` the requirement
    is that option's value and the positional word only names the app: not judged here."""
    found = _after_verb(words[1:], ("install",))
    if found is None:
        return None
    before, rest = found
    install = _pip_like("pipx", command, "install", rest, env, before)
    if "--spec" in install.options:
        return dataclasses.replace(install, specs=())
    return install


def _after_verb(words: list[Word], verbs: tuple[str, ...]) -> tuple[list[Word], list[Word]] | None:
    """(the options before the subcommand, the words after it), or None when the first word
    that is not an option (or an option's value) is another subcommand."""
    index = 0
    while index < len(words):
        word = words[index]
        if word.text in verbs:
            return words[:index], words[index + 1 :]
        if not word.text.startswith("-"):
            return None
        takes_value = "=" not in word.text and word.text in _VALUE_OPTIONS
        index += 2 if takes_value else 1
    return None


def _pip_like(
    tool: str,
    command: Command,
    verb: str,
    words: list[Word],
    env: Env,
    before: list[Word] | tuple[Word, ...] = (),
    *,
    project: bool = False,
    sync_file: bool = False,
) -> PythonInstall:
    specs: list[Spec] = []
    requirement_files: list[Word] = []
    constraint_files: list[Word] = []
    index_urls: list[Word] = []
    extra_index_urls: list[Word] = []
    find_links: list[Word] = []
    options: set[str] = set()
    index = 0
    words = [*before, *words]
    first = len(before)  # the words before the subcommand are options and their values only
    while index < len(words):
        word = words[index]
        text = word.text
        if text.startswith("-") or index < first:
            option, has_value, value = text.partition("=")
            options.add(option)
            target: Word | None = None
            if has_value:
                offset = len(option) + 1
                target = Word(value, word.start + offset, word.end)
            elif index + 1 < len(words) and _takes_value(option, words[index + 1].text):
                index += 1
                target = words[index]
            if target is not None:
                if option in ("-r", "--requirement"):
                    requirement_files.append(target)
                elif option in ("-c", "--constraint", "--override", "--build-constraint"):
                    constraint_files.append(target)
                elif option in (
                    "-i",
                    "--index-url",
                    "--extra-index-url",
                    "--index",
                    "--default-index",
                    "-f",
                    "--find-links",
                ):
                    index_urls.append(target)
                    if option in ("--extra-index-url", "-f", "--find-links"):
                        extra_index_urls.append(target)
                    if option in ("-f", "--find-links"):
                        find_links.append(target)
                elif option in ("-e", "--editable"):
                    specs.append(editable(target.text, target, env))
            index += 1
            continue
        if sync_file and verb == "sync":  # `uv pip sync FILE`: FILE is a requirements file
            requirement_files.append(word)
        elif not (tool == "poetry" and verb == "install"):  # installs the project, takes no names
            specs.append(classify(text, word, env))
        index += 1
    return PythonInstall(
        tool,
        command,
        verb,
        tuple(specs),
        tuple(requirement_files),
        tuple(constraint_files),
        (),
        tuple(index_urls),
        frozenset(options),
        project=project,
        extra_index_urls=tuple(extra_index_urls),
        find_links=tuple(find_links),
    )


def _takes_value(option: str, following: str) -> bool:
    """True when `option` takes the next word as its value. An option missing from the table
    followed by a bare number (`--some-new-option 999`) takes it too: no project is a number."""
    if option in _VALUE_OPTIONS:
        return True
    return option.startswith("--") and following.isdigit()


def _conda(command: Command, words: list[Word], env: Env) -> PythonInstall | None:
    texts = [w.text for w in words]
    if len(texts) < 2:
        return None
    verb = texts[1]
    if verb == "env" and len(texts) >= 3 and texts[2] in ("create", "update"):
        rest, verb = words[3:], "env"
    elif verb in ("install", "create", "update"):
        rest = words[2:]
    else:
        return None
    specs: list[Spec] = []
    env_files: list[Word] = []
    options: set[str] = set()
    index = 0
    while index < len(rest):
        word = rest[index]
        option, has_value, value = word.text.partition("=")
        if word.text.startswith("-"):
            options.add(option)
            target = None
            if has_value:
                target = Word(value, word.start + len(option) + 1, word.end)
            elif option in _CONDA_VALUE_OPTIONS and index + 1 < len(rest):
                index += 1
                target = rest[index]
            if target is not None and option in ("-f", "--file"):
                env_files.append(target)
            index += 1
            continue
        specs.append(conda_spec(word.text, word, env))
        index += 1
    if verb == "update" and not specs:
        return None
    return PythonInstall(
        "conda", command, verb, tuple(specs), (), (), tuple(env_files), (), frozenset(options)
    )


def conda_spec(text: str, word: Word | None, env: Env) -> Spec:
    """A conda match spec: `pkg`, `pkg=1.2.3`, `pkg==1.2.3`, `pkg=1.2.3=build`, `pkg>=1`."""
    value, complete = expand_shell(text, env)
    if not complete:
        return Spec(text, word, "name", True, "", None)
    if "::" in value:
        value = value.split("::", 1)[1]
    match = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", value)
    if not match:
        return Spec(text, word, "name", True, "", None)
    name, rest = match.group(1), match.group(2).strip()
    exact = re.match(r"^==?([0-9][A-Za-z0-9_.+!]*)(=.*)?$", rest)
    pinned = bool(exact) and "*" not in rest
    version = exact.group(1) if exact else None
    return Spec(text, word, "name", pinned, name.lower(), version if pinned else None)


def editable(text: str, word: Word | None, env: Env) -> Spec:
    """`-e TARGET`: pip takes a local directory or a VCS URL there, never a project name."""
    spec = classify(text, word, env)
    if spec.kind == "name" and spec.name:
        return Spec(text, word, "path", True, "", None)
    return spec


def vcs_pinned(url: str) -> bool:
    """A VCS URL whose `@ref` is a commit or a release tag (`@v2.20.0`), not a branch."""
    without_fragment = url.split("#", 1)[0]
    path = without_fragment.split("://", 1)[-1]
    if "@" not in path.split("/", 1)[-1]:
        return False
    ref = path.rsplit("@", 1)[1]
    return bool(_HEX_REF.search("@" + ref + "#")) or is_version_tag(ref)


def classify(text: str, word: Word | None, env: Env) -> Spec:
    """Judge one pip/uv requirement argument."""
    value, complete = expand_shell(text, env)
    if not complete:
        return Spec(text, word, "name", True, "", None)
    stripped = value.strip()
    lowered = stripped.lower()
    if (
        lowered.startswith(("git+", "hg+", "svn+", "bzr+"))
        or " @ git+" in lowered
        or ("@" in stripped and "git+" in lowered)
    ):
        return Spec(text, word, "vcs", vcs_pinned(stripped.split(" @ ", 1)[-1]), "", None)
    if "://" in stripped and "@" not in stripped:
        return Spec(text, word, "url", True, "", None)
    if (
        stripped.startswith((".", "/", "~"))
        or lowered.endswith((".whl", ".tar.gz", ".zip", ".tgz"))
        or ("/" in stripped and not re.search(r"[<>=!~]", stripped))
    ):
        return Spec(text, word, "path", True, "", None)
    # Imported here: only a Dockerfile that installs Python packages pays for `packaging`.
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(stripped)
    except InvalidRequirement:
        return Spec(text, word, "name", True, "", None)
    if requirement.url:
        url = requirement.url
        pinned = (not url.startswith("git+")) or vcs_pinned(url)
        kind = "vcs" if url.startswith(("git+", "hg+")) else "url"
        return Spec(text, word, kind, pinned, requirement.name.lower(), None)
    specifiers = list(requirement.specifier)
    exact = len(specifiers) >= 1 and any(
        s.operator == "===" or (s.operator == "==" and "*" not in s.version) for s in specifiers
    )
    version = next((s.version for s in specifiers if s.operator in ("==", "===")), None)
    return Spec(
        text,
        word,
        "name",
        exact,
        requirement.name.lower().replace("_", "-"),
        version if exact else None,
        str(requirement.specifier),
        frozenset(e.lower() for e in requirement.extras),
    )


@dataclass(frozen=True)
class FileRequirement:
    """One requirement line of a requirements/constraints file."""

    spec: Spec
    line: int
    column: int


@dataclass(frozen=True)
class RequirementFile:
    """Requirement lines plus the files it includes (`-r`) and constrains with (`-c`), and the
    index URLs it sets (`--index-url`, `--extra-index-url`, `--find-links`)."""

    requirements: tuple[FileRequirement, ...]
    includes: tuple[str, ...]
    constraints: tuple[str, ...]
    hashes: bool
    index_urls: tuple[str, ...] = ()
    primary_index_urls: tuple[str, ...] = ()  # those of them set by `-i`/`--index-url`


_INDEX_OPTIONS = frozenset(
    ["-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--index", "--default-index"]
)


def parse_requirements(text: str) -> RequirementFile:
    """Parse a pip requirements file (comments, continuations, options, `--hash`)."""
    requirements: list[FileRequirement] = []
    includes: list[str] = []
    constraints: list[str] = []
    index_urls: list[str] = []
    primary: list[str] = []
    hashes = False
    for number, line, column in _logical_lines(text):
        body = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not body:
            continue
        if body.startswith("-"):
            option, _, value = body.replace("=", " ", 1).partition(" ")
            value = value.strip()
            if option in ("-r", "--requirement"):
                includes.append(value)
            elif option in ("-c", "--constraint"):
                constraints.append(value)
            elif option in ("-e", "--editable"):
                requirements.append(FileRequirement(editable(value, None, {}), number, column))
            elif option in _INDEX_OPTIONS:
                index_urls.append(value)
                if option in ("-i", "--index-url", "--default-index"):
                    primary.append(value)
            continue
        if "--hash" in body:
            hashes = True
            body = body.split("--hash", 1)[0].strip()
        body = body.split(";", 1)[0].strip() if "://" not in body else body
        requirements.append(FileRequirement(classify(body, None, {}), number, column))
    return RequirementFile(
        tuple(requirements),
        tuple(includes),
        tuple(constraints),
        hashes,
        tuple(index_urls),
        tuple(primary),
    )


def _logical_lines(text: str) -> Iterator[tuple[int, str, int]]:
    pending: list[str] = []
    first = 0
    column = 1
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            first = number
            column = len(raw) - len(raw.lstrip()) + 1
        if raw.endswith("\\"):
            pending.append(raw[:-1])
            continue
        pending.append(raw)
        yield first, " ".join(pending), column
        pending = []
    if pending:
        yield first, " ".join(pending), column


@dataclass(frozen=True)
class EnvFileSpec:
    """A dependency of a conda environment file."""

    spec: Spec
    line: int
    column: int
    pip: bool
    # The index URLs its `pip:` section sets (`- --extra-index-url URL`), which conda hands
    # to pip with the requirements: those of a pip dependency only.
    index_urls: tuple[str, ...] = ()
    primary_index_urls: tuple[str, ...] = ()  # those of them set by `--index-url`


def parse_conda_env(text: str) -> list[EnvFileSpec]:
    """Dependencies of a conda `environment.yml`, conda and `pip:` sections, with lines."""
    import yaml  # only for a build context that has an environment file

    from gpuship.documents import compose_yaml
    from gpuship.errors import InputError
    from gpuship.limits import DEFAULT_LIMITS

    try:
        # Within the default YAML limits: a PR's environment.yml can nest deeper than Python
        # recurses or hide an alias bomb; then it is not read, like invalid YAML.
        document = compose_yaml(text, "environment.yml", DEFAULT_LIMITS)
    except (yaml.YAMLError, InputError):
        return []
    result: list[EnvFileSpec] = []
    if not isinstance(document, yaml.MappingNode):
        return result
    for key, value in document.value:
        if key.value != "dependencies" or not isinstance(value, yaml.SequenceNode):
            continue
        for item in value.value:
            if isinstance(item, yaml.ScalarNode):
                spec = conda_spec(str(item.value), None, {})
                if spec.name not in ("python", "pip"):
                    mark = item.start_mark
                    result.append(EnvFileSpec(spec, mark.line + 1, mark.column + 1, False))
            elif isinstance(item, yaml.MappingNode):
                for sub_key, sub_value in item.value:
                    if sub_key.value == "pip" and isinstance(sub_value, yaml.SequenceNode):
                        result.extend(_pip_section(sub_value.value))
    return result


def _pip_section(items: list[yaml.Node]) -> Iterator[EnvFileSpec]:
    """The requirements of an environment file's `pip:` list, with the index URLs its option
    lines set (conda writes the whole list to one requirements file for pip)."""
    parsed = parse_requirements(
        "\n".join(str(i.value) for i in items if str(i.value).startswith("-"))
    )
    for item in items:
        text_value = str(item.value)
        if text_value.startswith("-"):
            continue
        mark = item.start_mark
        yield EnvFileSpec(
            classify(text_value, None, {}),
            mark.line + 1,
            mark.column + 1,
            True,
            parsed.index_urls,
            parsed.primary_index_urls,
        )


@dataclass(frozen=True)
class OsInstall:
    """An apt-get/apt/dnf/yum/microdnf/apk install with its package words."""

    manager: str  # apt | dnf | apk
    command: Command
    packages: tuple[Word, ...]
    # `dnf module install nodejs:20`: the words are modules, pinned by their stream.
    modules: bool = False


_OS_VALUE_OPTIONS = frozenset(
    [
        "-t",
        "--target-release",
        "-o",
        "--option",
        "-c",
        "--config-file",
        "--config",
        "--virtual",
        "-X",
        "--repository",
        "--setopt",
        "--enablerepo",
        "--disablerepo",
        "--repo",
        "--repoid",
        "-x",
        "--exclude",
        "--installroot",
        "--releasever",
    ]
)
_DNF_FAMILY = frozenset({"dnf", "dnf5", "yum", "microdnf", "tdnf"})
# dnf/yum subcommands (and their documented aliases, dnf(8) and yum(8)) that install what the
# command line names: their words are packages whose versions GSL107 reads.
_DNF_INSTALL = frozenset({"install", "in", "localinstall"})
# Subcommands that download packages into the cache (GSL305): installs, upgrades, reinstalls,
# downgrades, distro-syncs and swaps, also of groups and modules.
_DNF_DOWNLOADS = _DNF_INSTALL | frozenset(
    {
        "reinstall",
        "rei",
        "upgrade",
        "up",
        "update",
        "upgrade-minimal",
        "up-min",
        "update-minimal",
        "distro-sync",
        "distrosync",
        "dsync",
        "downgrade",
        "dg",
        "swap",
        "groupinstall",
        "groupupdate",
    }
)


def os_install(command: Command) -> OsInstall | None:
    """The OS package install a command performs, if any. A group install (`dnf group install
    "Development Tools"`, `dnf install @core`) names no package and is none."""
    name = command.name
    if name in ("apt-get", "apt", "aptitude"):
        return _os_packages("apt", command, ("install",))
    if name == "apk":
        return _os_packages("apk", command, ("add",))
    if name not in _DNF_FAMILY:
        return None
    verbs = _dnf_verbs(command)
    if len(verbs) >= 2 and verbs[0][1].text == "module" and verbs[1][1].text == "install":
        packages = [w for _, w in verbs[2:]]
        return OsInstall("dnf", command, tuple(packages), modules=True)
    if not verbs or verbs[0][1].text not in _DNF_INSTALL:
        return None
    packages = [w for _, w in verbs[1:] if not w.text.startswith("@")]
    return OsInstall("dnf", command, tuple(packages))


def os_download(command: Command) -> Word | None:
    """The subcommand word of a dnf/yum/microdnf/tdnf command that downloads packages into the
    package cache (`install`, `in`, `upgrade`, `group install`...), or None."""
    if command.name not in _DNF_FAMILY:
        return None
    verbs = _dnf_verbs(command)
    if not verbs:
        return None
    first = verbs[0][1]
    if first.text in _DNF_DOWNLOADS:
        return first
    if first.text in ("group", "groups", "module") and len(verbs) > 1:
        second = verbs[1][1]
        return second if second.text in _DNF_DOWNLOADS else None
    return None


def _dnf_verbs(command: Command) -> list[tuple[int, Word]]:
    """The words of a dnf-like command that are neither options nor option values (the
    subcommand first), with their index in the command."""
    found: list[tuple[int, Word]] = []
    words = command.words
    index = 1
    while index < len(words):
        word = words[index]
        if word.text.startswith("-"):
            if word.text in _OS_VALUE_OPTIONS:
                index += 1
        else:
            found.append((index, word))
        index += 1
    return found


def _os_packages(manager: str, command: Command, verbs: tuple[str, ...]) -> OsInstall | None:
    words = command.words
    verb_index = next((i for i, w in enumerate(words) if w.text in verbs), None)
    if verb_index is None:
        return None
    packages: list[Word] = []
    index = verb_index + 1
    while index < len(words):
        word = words[index]
        if word.text.startswith("-"):
            if word.text in _OS_VALUE_OPTIONS and "=" not in word.text:
                index += 1
        else:
            packages.append(word)
        index += 1
    return OsInstall(manager, command, tuple(packages))


def os_package_pinned(manager: str, text: str, *, module: bool = False) -> bool:
    """hadolint's notion of a pinned OS package (DL3008/DL3018/DL3041); a dnf module is pinned
    by its stream (`nodejs:20`, DL3041)."""
    if "$" in text:
        return True
    if module:
        return ":" in text
    if manager == "apt":
        return "=" in text or "/" in text or text.endswith(".deb")
    if manager == "apk":
        return any(c in text for c in "=~<>") or text.endswith(".apk")
    parts = text.split("-")
    return text.endswith(".rpm") or any(p[:1].isdigit() for p in parts[1:])


def os_package_name(manager: str, text: str) -> str:
    """`gcc=4:11` -> `gcc`; `gcc-11.2` (dnf) -> `gcc`."""
    if manager == "dnf":
        return re.split(r"-\d", text, maxsplit=1)[0]
    return re.split(r"[=<>~/]", text, maxsplit=1)[0]


def is_version_tag(ref: str) -> bool:
    """True for release-like git refs (`v1.2.3`, `2.0.1`, `core_v0.15.0`)."""
    return bool(_VERSION_TAG.match(ref) or _PREFIXED_TAG.match(ref))


def parse_pyproject(text: str, extras: tuple[str, ...] = ()) -> list[FileRequirement]:
    """`[project].dependencies` of a pyproject.toml, and the optional dependencies of `extras`
    (`pip install ".[serve]"`), with the line of each entry. An extra that names the project
    itself (`all = ["proj[serve,dev]"]`) adds nothing of its own and is skipped.

    A file that is not TOML lists nothing (no finding, never a guess).
    """
    document = _load_toml(text)
    project = document.get("project") if document else None
    if not isinstance(project, dict):
        return []
    entries = _strings(project.get("dependencies"))
    optional = project.get("optional-dependencies")
    for extra in extras:
        entries += _strings(optional.get(extra)) if isinstance(optional, dict) else []
    own = str(project.get("name", "")).lower().replace("_", "-")
    lines = text.splitlines()
    result = []
    for dependency in entries:
        line, column = 1, 1
        for number, content in enumerate(lines, start=1):
            found = content.find(dependency)
            if found >= 0:
                line, column = number, found + 1
                break
        spec = classify(dependency, None, {})
        if own and spec.name == own:
            continue
        result.append(FileRequirement(spec, line, column))
    return result


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


_EXTRAS = re.compile(r"^(?P<path>.*?)\[(?P<extras>[A-Za-z0-9_.,\- ]*)\]$")


def project_path(text: str) -> tuple[str, tuple[str, ...]]:
    """A local project argument without its extras: `.[serve,dev]` -> (`.`, (`serve`, `dev`))."""
    match = _EXTRAS.match(text)
    if match is None:
        return text, ()
    extras = tuple(e.strip().lower() for e in match.group("extras").split(",") if e.strip())
    return match.group("path"), extras


def _load_toml(text: str) -> dict[str, object] | None:
    try:
        return load_toml(text, "pyproject.toml")
    except InputError:
        return None


@dataclass(frozen=True)
class WheelBuild:
    """What a binary wheel's file name says it was built for (PEP 427 name and local version:
    `flash_attn-2.7.4+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl`)."""

    project: str
    cuda: str | None  # "12" or "12.4" from `cu12` / `cu124`
    torch: str | None  # "2.6" from `torch2.6` / `pt26`
    python: str | None  # "3.11" from `cp311`; None for py3/abi3 wheels (any CPython 3)


_WHEEL_NAME = re.compile(
    r"^(?P<project>[A-Za-z0-9_.]+)-(?P<version>[^-]+)(?:-\d[^-]*)?"
    r"-(?P<python>[^-]+)-(?P<abi>[^-]+)-(?P<platform>[^-]+)\.whl$"
)
_LOCAL_CUDA = re.compile(r"cu(\d\d)(\d)?(?![\d])")
_LOCAL_TORCH = re.compile(r"(?:torch|pt)(\d+)\.?(\d+)")


def wheel_build(location: str) -> WheelBuild | None:
    """The build a wheel file or URL names (`%2B` in URLs is `+`); None when it is no wheel."""
    from urllib.parse import unquote

    name = unquote(location.split("?", 1)[0].split("#", 1)[0]).rsplit("/", 1)[-1]
    match = _WHEEL_NAME.match(name)
    if match is None:
        return None
    local = match.group("version").partition("+")[2].lower()
    cuda = _LOCAL_CUDA.search(local)
    torch = _LOCAL_TORCH.search(local.replace(cuda.group(0), "") if cuda else local)
    python = None
    tag = match.group("python")
    abi = match.group("abi")
    if re.fullmatch(r"cp3\d+", tag) and abi != "abi3":
        python = f"3.{tag[3:]}"
    return WheelBuild(
        match.group("project").lower().replace("_", "-"),
        (cuda.group(1)[0:2] + ("." + cuda.group(2) if cuda.group(2) else "")) if cuda else None,
        f"{torch.group(1)}.{torch.group(2)}" if torch else None,
        python,
    )
