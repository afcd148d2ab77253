"""Property-based tests (hypothesis) for the structured inputs: each property states what must
hold for every input of its shape, and hypothesis searches for one where it does not.

Where an independent implementation exists, the property is a differential one: the tar
walker against the stdlib's `tarfile`, the RE2 `.dockerignore` matcher against the same
patterns under Python's `re`, JSON reading against `json.loads`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tarfile
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuship.cli.config_catalog import load_config
from gpuship.cuda.errors import InvalidRequirement, InvalidVersion
from gpuship.cuda.require import GpuDevice, evaluate_expression
from gpuship.cuda.version import Version
from gpuship.documents import load_json, load_yaml
from gpuship.errors import ConfigError, InputError, LimitExceeded
from gpuship.image.tarwalk import DIRECTORY, HARDLINK, REGULAR, SYMLINK, TarWalker
from gpuship.limits import DEFAULT_LIMITS
from gpuship.lint.dockerignore import IgnoreRules, _re2, _translate
from gpuship.lint.stages import expand
from gpuship.registry.manifest import MEDIA_OCI_MANIFEST, parse_manifest

SETTINGS = settings(
    # 150 in the test command; the weekly fuzz workflow asks for many more.
    max_examples=int(os.environ.get("GPUSHIP_HYPOTHESIS_EXAMPLES", "150")),
    deadline=None,  # shared CI machines: a slow example is not a failure
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=40,
)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(item) for item in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(item) for item in value.values()), default=0)
    return 0


@SETTINGS
@given(JSON_VALUES, st.integers(min_value=1, max_value=8))
def test_json_reads_like_json_loads_within_the_depth_limit(value: Any, max_depth: int) -> None:
    text = json.dumps(value)
    limits = DEFAULT_LIMITS.override(json_max_depth=max_depth)
    if depth(value) > max_depth:
        with pytest.raises(LimitExceeded, match="nests deeper"):
            load_json(text, "doc", limits)
    else:
        assert load_json(text, "doc", limits) == json.loads(text)


@SETTINGS
@given(st.binary(max_size=200))
def test_json_reader_raises_only_input_errors(data: bytes) -> None:
    with contextlib.suppress(InputError):
        load_json(data, "doc", DEFAULT_LIMITS)


def expanded_nodes(value: Any) -> int:
    """Nodes of a constructed YAML value with every shared reference counted again."""
    if isinstance(value, dict):
        return 1 + sum(1 + expanded_nodes(item) for item in value.values())
    if isinstance(value, list):
        return 1 + sum(expanded_nodes(item) for item in value)
    return 1


@st.composite
def alias_ladders(draw: st.DrawFn) -> str:
    """YAML whose anchors repeat earlier anchors: small text, many expanded nodes."""
    rungs = draw(st.integers(min_value=1, max_value=6))
    lines = [f"a0: &a0 [{', '.join(['x'] * draw(st.integers(1, 4)))}]"]
    for rung in range(1, rungs):
        width = draw(st.integers(min_value=1, max_value=5))
        items = [f"*a{draw(st.integers(0, rung - 1))}" for _ in range(width)]
        lines.append(f"a{rung}: &a{rung} [{', '.join(items)}]")
    return "\n".join(lines) + "\n"


@SETTINGS
@given(alias_ladders(), st.integers(min_value=10, max_value=2_000))
def test_yaml_node_count_never_underestimates_the_expansion(text: str, max_nodes: int) -> None:
    limits = DEFAULT_LIMITS.override(yaml_max_nodes=max_nodes)
    try:
        value = load_yaml(text, "f.yaml", limits)
    except LimitExceeded:
        return
    assert expanded_nodes(value) <= max_nodes


@SETTINGS
@given(st.text(max_size=300))
def test_yaml_reader_raises_only_yaml_or_input_errors(text: str) -> None:
    with contextlib.suppress(yaml.YAMLError, InputError):
        load_yaml(text, "f.yaml", DEFAULT_LIMITS.override(yaml_max_nodes=2_000))


@SETTINGS
@given(text=st.text(max_size=400))
def test_config_loader_raises_only_config_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "gpuship.yaml"
    path.write_text(text)
    with contextlib.suppress(ConfigError):
        load_config(path, {})


def _reference_regex(pattern: str) -> re.Pattern[str]:
    """The same translation with Python's escaping, run by Python's engine (not RE2)."""
    with warnings.catch_warnings():  # "[[" may become a nested set in a future Python
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(_translate(pattern, re.escape))


PATTERN_CHARS = st.sampled_from(list("ab./*?[]!-+({$\\ "))
PATH_CHARS = st.sampled_from(list("ab./-+({$ "))


@SETTINGS
@given(st.text(PATTERN_CHARS, min_size=1, max_size=10), st.text(PATH_CHARS, max_size=12))
def test_dockerignore_re2_matches_like_python_re(pattern: str, path: str) -> None:
    rules = IgnoreRules.parse(pattern)
    if not rules.patterns:
        return  # blank, a comment, refused, or cleaned away
    cleaned = rules.patterns[0]
    try:
        reference = _reference_regex(__import__("posixpath").normpath(cleaned.text).lstrip("/"))
    except re.error:
        return  # Python refuses a class RE2 accepts: nothing to compare
    re2, options = _re2()
    compiled = re2.compile(cleaned.regex, options)  # the matcher keeps the expression's text
    for candidate in (path.strip("/"), "a/" + path.strip("/")):
        if not candidate:
            continue
        assert bool(compiled.fullmatch(candidate)) == bool(reference.fullmatch(candidate))


VARIABLE_TEXT = st.lists(
    st.sampled_from(["$A", "${B}", "${A:-x$B}", "${B:+$A$A}", "${C-$A}", "y", "\\$"]), max_size=8
)


@SETTINGS
@given(
    VARIABLE_TEXT.map("".join),
    st.text(max_size=30),
    st.text(max_size=30),
    st.integers(min_value=0, max_value=200),
)
def test_expansion_is_exact_at_its_limit(text: str, a: str, b: str, max_bytes: int) -> None:
    env = {"A": a, "B": b}
    unbounded, complete = expand(text, env, max_bytes=1 << 30)
    bounded = expand(text, env, max_bytes=max_bytes)
    if len(unbounded) <= max_bytes or "$" not in text:
        assert bounded == (unbounded, complete)
    else:
        assert bounded == (text, False)


@SETTINGS
@given(st.text(max_size=40))
def test_versions_parse_or_are_invalid(text: str) -> None:
    try:
        version = Version.parse(text)
    except InvalidVersion:
        return
    assert str(version) == text.strip()


FACTORS = st.builds(
    lambda key, op, value: f"{key}{op}{value}",
    st.sampled_from(["cuda", "driver", "arch", "brand", "CUDA", "x", ""]),
    st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "=>", "!", ""]),
    st.from_regex(r"[0-9a-z.]{0,12}", fullmatch=True) | st.text(max_size=5),
)
EXPRESSIONS = st.lists(st.lists(FACTORS, max_size=3).map(",".join), max_size=3).map(" ".join)


@SETTINGS
@given(EXPRESSIONS, st.sampled_from([None, "535.104.05", "9" * 30]), st.booleans())
def test_require_evaluator_returns_or_says_invalid(
    expression: str, driver: str | None, with_gpu: bool
) -> None:
    gpu = GpuDevice("Tesla", "8.0") if with_gpu else None
    with contextlib.suppress(InvalidRequirement):
        evaluate_expression(expression, driver, "12.4", gpu)


MEMBER_NAMES = st.text(st.sampled_from(list("abc/._-é")), min_size=1, max_size=120)
MEMBERS = st.lists(
    st.tuples(
        MEMBER_NAMES,
        st.sampled_from(["file", "dir", "symlink", "hardlink"]),
        st.binary(max_size=700),
    ),
    max_size=6,
)
_TYPES = {
    "file": tarfile.REGTYPE,
    "dir": tarfile.DIRTYPE,
    "symlink": tarfile.SYMTYPE,
    "hardlink": tarfile.LNKTYPE,
}
_KINDS = {"file": REGULAR, "dir": DIRECTORY, "symlink": SYMLINK, "hardlink": HARDLINK}


@SETTINGS
@given(MEMBERS, st.sampled_from([tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT]))
def test_tar_walker_lists_what_tarfile_lists(
    members: list[tuple[str, str, bytes]], fmt: int
) -> None:
    buffer = io.BytesIO()
    try:
        with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
            for name, kind, data in members:
                info = tarfile.TarInfo(name)
                info.type = _TYPES[kind]
                info.linkname = "target" if kind in ("symlink", "hardlink") else ""
                info.size = len(data) if kind == "file" else 0
                archive.addfile(info, io.BytesIO(data) if kind == "file" else None)
    except ValueError:
        return  # ustar cannot store the name: nothing written to compare
    buffer.seek(0)
    with tarfile.open(fileobj=io.BytesIO(buffer.getvalue()), mode="r") as reference:
        expected = [(m.name, m.isfile(), m.size if m.isfile() else 0) for m in reference]
    # tarfile drops trailing slashes from every name; gpuship normalizes paths later.
    walked = [(m.name.rstrip("/"), m.kind == REGULAR, m.size) for m in TarWalker(buffer).members()]
    assert walked == [(n.rstrip("/"), f, s) for n, f, s in expected]
    assert all(_KINDS[kind] for _, kind, _ in members)


DESCRIPTOR = st.fixed_dictionaries(
    {
        "mediaType": st.sampled_from(["application/vnd.oci.image.layer.v1.tar+gzip", "x", ""]),
        "digest": st.text(max_size=20),
        "size": st.integers() | st.text(max_size=3),
    }
)
MANIFESTS = st.fixed_dictionaries(
    {"schemaVersion": st.integers(0, 3) | st.text(max_size=2)},
    optional={
        "mediaType": st.sampled_from(
            [MEDIA_OCI_MANIFEST, "application/vnd.oci.image.index.v1+json", "text/plain"]
        ),
        "config": DESCRIPTOR,
        "layers": st.lists(DESCRIPTOR, max_size=3),
        "manifests": st.lists(DESCRIPTOR, max_size=3),
    },
)


@SETTINGS
@given(MANIFESTS)
def test_manifest_parser_returns_a_model_or_an_input_error(document: dict[str, Any]) -> None:
    with contextlib.suppress(InputError):
        parse_manifest(json.dumps(document).encode(), MEDIA_OCI_MANIFEST)


MAKE_LINES = st.sampled_from(
    [
        "all: a b",
        "a: b",
        "b:",
        "\techo $(X)",
        "\t@wget $(Y) -O $(X)",
        "X = $(Y)$(Y)$(Y)",
        "Y := $(X)$(X)",
        "Z ?= z",
        "include other.mk",
        ".PHONY: all",
        "%.o: %.c",
        "\t-$(Z) \\",
        "  continued",
        "# comment",
        "",
    ]
)


@SETTINGS
@given(st.lists(MAKE_LINES, max_size=30), st.lists(st.sampled_from(["all", "a", "b", "x"])))
def test_makefile_recipes_stay_bounded(lines: list[str], targets: list[str]) -> None:
    """Any mix of rules, recipes and self-referring variables gives recipes of bounded size,
    never an exception or an expansion that doubles per level."""
    from gpuship.lint.makefile import MAX_LINE_BYTES, recipes

    for recipe in recipes("\n".join(lines), targets):
        assert len(recipe.text) <= MAX_LINE_BYTES + 16 * len(lines)
