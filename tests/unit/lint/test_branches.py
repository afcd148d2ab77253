"""Shell `if`/`case` on build args (issue #37): which arm the build takes, from the text's
structure and the values the build has; what cannot be decided keeps every arm it may take."""

from __future__ import annotations

import pytest

from gpuship.dockerfile.source import SourceMap, Text
from gpuship.lint.branches import MAX_NESTING, NO_STRUCTURE, Branches, decide, describe
from gpuship.lint.shell import Command, ShellParser


def parse(script: str) -> list[Command]:
    return list(ShellParser().parse(Text(script, SourceMap(((0, 1, 1),)))).commands)


def branches_of(commands: list[Command], name: str) -> Branches:
    command = next(c for c in commands if c.name == name)
    return command.guards[-1].branches


IF_CHAIN = (
    'if [ "$MODE" = "source" ]; then make build; '
    'elif [[ $MODE == wheel* ]] && [ -n "$URL" ]; then pip install "$URL"; '
    "else echo none; fi; echo after"
)


def test_each_command_knows_its_arm() -> None:
    commands = parse(IF_CHAIN)
    arms = {tuple(c.argv): [(g.arm, g.condition) for g in c.guards] for c in commands}
    assert arms[("make", "build")] == [(0, False)]
    assert arms[("pip", "install", "$URL")] == [(1, False)]
    assert arms[("echo", "none")] == [(2, False)]
    assert arms[("echo", "after")] == []
    assert [(g.arm, g.condition) for c in commands if c.name == "[" for g in c.guards][:1] == [
        (0, True)
    ]


@pytest.mark.parametrize(
    ("env", "possible"),
    [
        ({"MODE": "source", "URL": ""}, {0}),
        ({"MODE": "wheel-cu121", "URL": "https://x/y.whl"}, {1}),
        ({"MODE": "wheel-cu121", "URL": ""}, {2}),
        ({"MODE": "other", "URL": None}, {2}),  # `[[ other == wheel* ]]` fails first
        ({"MODE": None, "URL": "u"}, {0, 1, 2}),  # MODE set at build time
        ({"MODE": "wheel", "URL": None}, {1, 2}),
    ],
)
def test_an_if_chain_takes_the_arm_its_values_select(
    env: dict[str, str | None], possible: set[int | None]
) -> None:
    decision = decide(branches_of(parse(IF_CHAIN), "make"), env)
    assert decision.possible == possible


def test_a_decision_names_the_variables_it_read() -> None:
    branches = branches_of(parse(IF_CHAIN), "make")
    assert decide(branches, {"MODE": "source"}).variables == {"MODE"}
    assert decide(branches, {"MODE": "wheel", "URL": ""}).variables == {"MODE", "URL"}


CASE = (
    'case "${CUDA_VERSION%.*}" in\n'
    "  11.8) pip install a ;;\n"
    "  12.1|12.4) pip install b ;;\n"
    '  "13.*") pip install c ;;\n'
    "esac"
)


@pytest.mark.parametrize(
    ("cuda", "possible"),
    [
        ("11.8.0", {0}),
        ("12.4.1", {1}),
        ("12.6.3", {None}),  # no pattern matches: no arm runs
        ("13.0.1", {None}),  # `"13.*"` is a literal: it only matches `13.*` itself
        (None, {0, 1, 2, None}),
    ],
)
def test_a_case_takes_the_first_matching_arm(cuda: str | None, possible: set[int | None]) -> None:
    commands = parse(CASE)
    assert [c.argv for c in commands] == [["pip", "install", x] for x in "abc"]  # no header
    decision = decide(branches_of(commands, "pip"), {"CUDA_VERSION": cuda})
    assert decision.possible == possible


@pytest.mark.parametrize(
    "script",
    [
        "if [ -f /opt/flag ]; then a; fi",  # a file of the build machine
        "if command -v nvcc; then a; fi",  # a command's exit status
        "if [ $X = 1 ]; then a; fi",  # unquoted and empty: `[ = 1 ]` is another test
        "if [[ $X =~ ^1 ]]; then a; fi",
        "case $X in 1) a ;& 2) b ;; esac",  # fall-through
    ],
)
def test_undecidable_conditions_keep_every_arm(script: str) -> None:
    commands = parse(script)
    decision = decide(commands[-1].guards[-1].branches, {"X": ""})
    assert len(decision.possible) > 1


def test_unbalanced_reserved_words_are_read_flat() -> None:
    commands = parse("if true; then a; fi; fi; b")
    assert all(not c.guards for c in commands)
    assert NO_STRUCTURE.guards(0) == ()


@pytest.mark.parametrize(("depth", "read"), [(MAX_NESTING, True), (MAX_NESTING + 1, False)])
def test_nesting_past_the_limit_is_read_flat(depth: int, read: bool) -> None:
    """A hostile depth leaves the text read flat, as before branches were read."""
    commands = parse("if true; then " * depth + "a; " + "fi; " * depth)
    (a,) = [c for c in commands if c.name == "a"]
    assert len(a.guards) == (depth if read else 0)


def test_loops_braces_and_subshells_nest() -> None:
    commands = parse(
        "for v in 1 2; do if [ $v = 1 ]; then a; fi; done; { if true; then b; fi; }; "
        "( if false; then c; else d; fi )"
    )
    guarded = {
        c.name: c.guards[-1].arm for c in commands if c.guards and not c.guards[-1].condition
    }
    assert guarded == {"a": 0, "b": 0, "c": 0, "d": 1}
    d = next(c for c in commands if c.name == "d")
    assert decide(d.guards[-1].branches, {}).possible == {1}


def test_a_sh_c_script_inherits_the_branch_of_its_command() -> None:
    commands = parse("if [ \"$X\" = 1 ]; then sh -c 'pip install a'; fi")
    pip = next(c for c in commands if c.name == "pip")
    assert [g.arm for g in pip.guards] == [0]


def test_branches_read_as_written() -> None:
    commands = parse(IF_CHAIN)
    guards = {c.name: c.guards[-1] for c in commands if c.guards}
    assert describe(guards["make"]) == '`if [ "$MODE" = "source" ]`'
    assert describe(guards["pip"]) == '`elif [[ $MODE == wheel* ]] && [ -n "$URL" ]`'
    assert describe(guards["echo"]) == '`else` of `if [ "$MODE" = "source" ]`'
    case = parse(CASE)
    assert describe(case[1].guards[-1]) == '`case "${CUDA_VERSION%.*}" in 12.1|12.4)`'


GUARDED_MAKE = 'if [ "$MODE" = "source" ]; then make build; fi\n'


@pytest.mark.parametrize(
    "before",
    [
        # A bash array, its list on several lines, a quoted `)` and a comment in it.
        'flags=(\n  --jobs 4\n  "--name=a)"  # a ) in a comment\n)\n',
        "flags+=(--verbose) opts[1]=(x y)\n",
        # A heredoc whose body is Python, not shell: its `if`/`else:` open and close nothing.
        "python3 - <<'PY'\nif sys.version_info >= (3, 12):\n    pass\n"
        "else:\n    print('old')\nPY\n",
        # `<<-` strips the tabs before the delimiter line; a here-string `<<<` has no body.
        'cat <<-EOF > /etc/app.conf\n\tif then\n\tEOF\ngrep -q x <<< "$IN"\n',
        # `<<` in arithmetic is a shift: no body follows, the next lines are commands.
        "(( mask = 1 << 3 ))\nif true; then :; fi\n",
    ],
    ids=["array-lines", "array-forms", "heredoc-python", "heredoc-tabs-herestring", "shift"],
)
def test_arrays_and_heredoc_bodies_keep_the_structure_after_them(before: str) -> None:
    commands = parse(before + GUARDED_MAKE)
    make = next(c for c in commands if c.name == "make")
    assert [g.arm for g in make.guards] == [0]
    assert decide(make.guards[-1].branches, {"MODE": "wheel"}).possible == {None}
    assert not any(c.name in ("else:", "pass", "print('old')", "if") for c in commands)
