"""The `.dockerignore` matcher (one RE2 set, literal patterns in a dict, each directory's answer
kept) decides every path exactly as moby/patternmatcher's loop does: each pattern in turn on
the path and on each of its parents, the last one to match deciding. The loop is kept here,
one compiled regex per pattern, as the reference."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuship.lint.dockerignore import IgnoreRules, _re2


def reference_excluded(rules: IgnoreRules, path: str) -> bool:
    """moby's MatchesOrParentMatches: every pattern, in order, on the path and its parents."""
    re2, options = _re2()
    parts = path.strip("/").split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for pattern in rules.patterns:
        regex = re2.compile(pattern.regex, options)
        if any(regex.fullmatch(candidate) for candidate in candidates):
            verdict = not pattern.exclusion
    return verdict


# Small alphabets, so that patterns and paths meet often: every glob operator, escapes,
# classes that can match `/`, exclusions, `**` in every position, dots for Clean.
TOKENS = ["**/", "**", "*", "?", "a", "b", "ab", "/", ".", "..", "[ab]", "[!a]", "[^/]", "[", "]"]
PATTERN = st.one_of(
    st.text(alphabet="ab/*?[]!.\\^-", min_size=1, max_size=10),
    st.builds(
        lambda bang, tokens: bang + "".join(tokens),
        st.sampled_from(["", "!"]),
        st.lists(st.sampled_from([*TOKENS, "\\*", "-"]), min_size=1, max_size=5),
    ),
)
COMPONENT = st.sampled_from(["a", "b", "ab", "ba", "a.b", ".a", "aa", "b-a", "^", "[a]"])
PATH = st.lists(COMPONENT, min_size=1, max_size=5).map("/".join)


@settings(max_examples=600, deadline=None)
@given(st.lists(PATTERN, min_size=1, max_size=12), st.lists(PATH, min_size=1, max_size=12))
def test_the_matcher_decides_as_the_pattern_by_pattern_loop(
    lines: list[str], paths: list[str]
) -> None:
    rules = IgnoreRules.parse("\n".join(lines))
    # Children before parents and repeats too: the kept answers must not change any verdict.
    for path in [*paths, *reversed(paths), *(p.rpartition("/")[0] or p for p in paths)]:
        assert rules.excluded(path) == reference_excluded(rules, path), (lines, path)


def test_known_cases_of_docker_semantics() -> None:
    rules = IgnoreRules.parse("**/*.tmp\nbuild\n!build/keep\ndocs/**\n# c\n/abs\n[z-a]\n")
    assert rules.excluded("x/y/z.tmp") and rules.excluded("z.tmp")
    assert rules.excluded("build") and rules.excluded("build/a/b")
    assert not rules.excluded("build/keep") and rules.excluded("build/keep2")
    assert rules.excluded("docs/a") and not rules.excluded("docs")
    assert rules.excluded("abs/x") and not rules.excluded("src/abs")
    assert [p.line for p in rules.problems] == [7]
    # A prefix after **/ is looked for at every component, not only the first.
    deep = IgnoreRules.parse("**/ab*\n**/x/y?\n")
    assert deep.excluded("q/abc") and deep.excluded("q/r/x/yz/w") and not deep.excluded("q/b")


def test_an_empty_class_swallows_what_follows_as_the_regex_reads_it() -> None:
    # `[]` opens a class whose first `]` is a member (RE2, and Go's regexp under moby): the
    # `b[` after it are members, not a literal every match must hold. Found by hypothesis.
    rules = IgnoreRules.parse("?[]b[?")
    assert rules.excluded("ab") and rules.excluded("a[") and not rules.excluded("ac")
    assert rules.excluded("ab") == reference_excluded(rules, "ab")
    # So does `[\]`: the regex reads `\]` as a member, not the class's end.
    escaped = IgnoreRules.parse("[\\][?")
    assert escaped.excluded("^") and escaped.excluded("]")
    assert escaped.excluded("^") == reference_excluded(escaped, "^")
