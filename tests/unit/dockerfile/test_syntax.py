"""The parser's own guarantees, beyond what the BuildKit oracle can see (test_parser_oracle)."""

from __future__ import annotations

import pytest

from gpuship.dockerfile import DockerfileSyntaxError, DockerfileTooLarge, parse
from gpuship.dockerfile.gostr import quote
from gpuship.dockerfile.jsonarray import NotStringArray, string_array


@pytest.mark.parametrize(
    ("word", "name", "expand"),
    [  # BuildKit's parser_heredoc_test.go: a quoted name stops expansion in the body
        ("<<EOF", "EOF", True),
        ("<<-'NOEXPAND'", "NOEXPAND", False),
        ('<<"EOF"', "EOF", False),
        ("<<eo'f'", "eof", False),
        ("<<eo\\'f", "eo'f", True),
        ("<<'e'o\\'f", "eo'f", False),
        ("<<'one two'", "one two", False),
        ("<<$EOF", "$EOF", True),
    ],
)
def test_heredoc_names_and_expansion(word: str, name: str, expand: bool) -> None:
    node = parse(f"RUN {word}\nbody\n{name}\n").nodes[0]
    assert [(h.name, h.expand, h.content, h.first_line) for h in node.heredocs] == [
        (name, expand, "body\n", 2)
    ]


def test_segments_map_joined_text_to_lines_and_columns() -> None:
    node = parse("FROM a\n  RUN a \\\n# c\n\n    b \\\n c\n").nodes[1]
    assert node.original == "RUN a     b  c"
    assert node.segments == ((0, 2, 3), (6, 5, 1), (12, 6, 1))
    assert (node.start_line, node.end_line) == (2, 6)


def test_comments_between_instructions_only() -> None:
    tree = parse("# escape=`\n# top\nRUN a `\n# inside\n  b\n  #  after \nCOPY <<X /y\n# body\nX\n")
    assert [(c.line, c.column, c.text) for c in tree.comments] == [
        (1, 1, " escape=`"),
        (2, 1, " top"),
        (6, 3, "  after "),
    ]
    assert tree.escape == "`"
    assert tree.nodes[1].heredocs[0].content == "# body\n"


def test_onbuild_wraps_its_instruction() -> None:
    node = parse("ONBUILD --x COPY --from=a <<EOF /dst\nhi\nEOF\n").nodes[0]
    assert (node.keyword, node.flags, node.values) == ("ONBUILD", ("--x",), ())
    assert node.sub is not None and node.sub.flags == ("--from=a",)
    assert node.sub.values == ("<<EOF", "/dst") and node.heredocs[0].content == "hi\n"


def test_deep_nesting_stays_iterative() -> None:
    # ONBUILD within ONBUILD and JSON arrays nest past Python's recursion limit.
    assert parse("ONBUILD " * 5000 + "RUN x\n").nodes[0].sub is not None
    node = parse("RUN " + "[" * 20_000 + "]" * 20_000 + "\n").nodes[0]
    assert node.values == ("[" * 20_000 + "]" * 20_000,) and not node.json


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("", "file with no instructions", 1),
        ("# escape=`\n# escape=\\\nFROM a\n", "only one escape parser directive can be used", 2),
        ("# escape=x\nFROM a\n", "invalid escape token 'x' does not match ` or \\", 1),
        ("FROM a\nRUN <<EOF\nx\n", "unterminated heredoc", 2),
        (
            'FROM a\nCMD ["a", 1]\n',
            "when using JSON array syntax, arrays must be comprised of strings only",
            2,
        ),
        (
            "FROM a\nLABEL a=b c\n",
            'Syntax error - can\'t find = in "c". Must be of the form: name=value',
            2,
        ),
        ("FROM a\nRUN <<${x:-a b}\n", "failed to process \"${x:-a\": syntax error: missing '}'", 2),
        (
            "FROM a\nRUN " + "x" * 70_000 + "\n",
            "dockerfile line greater than max allowed size of 65535",
            2,
        ),
    ],
)
def test_errors_are_buildkits_with_our_line(text: str, message: str, line: int) -> None:
    with pytest.raises(DockerfileSyntaxError) as caught:
        parse(text)
    assert (caught.value.message, caught.value.line) == (message, line)


def test_limit_on_kept_lines() -> None:
    text = "FROM a\n" + "# note\n" * 9 + "RUN b\n"
    assert len(parse(text, limit=11).nodes) == 2
    with pytest.raises(DockerfileTooLarge) as caught:
        parse(text, limit=10)
    assert caught.value.line == 11 and "more than 10" in str(caught.value)


def test_go_quote_and_json_edges() -> None:
    assert quote('a"\\\t\x01\u00a0\u2603\U0001f600\udc85') == '"a\\"\\\\\\t\\x01\\u00a0☃😀\\x85"'
    assert string_array('["a", "\\ud800"] trailing') == ["a", "\ufffd"]
    assert string_array("[1e400]") is None  # Go: cannot unmarshal into float64
    with pytest.raises(NotStringArray):
        string_array("[1e300]")
