"""The recipes `make TARGET` runs, as the weights check reads them from a Makefile."""

from __future__ import annotations

from gpuship.lint.makefile import recipes

MAKEFILE = """\
MODEL ?= org/model
OUT := /opt/weights
# a comment
.PHONY: all weights dirs serve

all: weights

weights: dirs
\t@echo "fetching $(MODEL)"
\t-huggingface-cli download $(MODEL) \\
\t    --local-dir $(OUT)/chat
\tcp $$HOME/x $(UNSET)

dirs:
\tmkdir -p $(OUT)

serve: ; python serve.py
%.o: %.c
\tcc -c $<
"""


def test_named_target_runs_prerequisites_first() -> None:
    found = recipes(MAKEFILE, ["weights"])
    assert [(r.target, r.line) for r in found] == [
        ("dirs", 15),
        ("weights", 9),
        ("weights", 10),
        ("weights", 12),
    ]
    assert found[0].text == "mkdir -p /opt/weights"


def test_variables_continuations_and_escapes() -> None:
    texts = [r.text for r in recipes(MAKEFILE, ["weights"])]
    # `@`/`-` prefixes go, a continued line is one command, `$$` is the shell's `$`, and a
    # variable the Makefile does not set stays a variable (unknown to the checks).
    assert texts[1] == 'echo "fetching org/model"'
    assert texts[2] == "huggingface-cli download org/model --local-dir /opt/weights/chat"
    assert texts[3] == "cp $HOME/x ${UNSET}"


def test_default_target_is_the_first_rule() -> None:
    assert [r.target for r in recipes(MAKEFILE, [])] == ["dirs", "weights", "weights", "weights"]


def test_inline_recipe_and_unknown_targets() -> None:
    assert [r.text for r in recipes(MAKEFILE, ["serve"])] == ["python serve.py"]
    assert recipes(MAKEFILE, ["nope"]) == []
    assert recipes("", []) == []


def test_a_cycle_of_prerequisites_ends() -> None:
    assert [r.target for r in recipes("a: b\n\techo a\nb: a\n\techo b\n", ["a"])] == ["b", "a"]


def test_a_rule_of_several_targets_gives_each_its_recipe() -> None:
    # Each target of the rule runs the whole recipe; a blank line does not end it.
    text = "a b: c\n\techo x\n\n\techo y\nc:\n\techo c\n"
    found = [(r.target, r.text) for r in recipes(text, ["a", "b"])]
    assert found == [
        ("c", "echo c"),
        ("a", "echo x"),
        ("a", "echo y"),
        ("b", "echo x"),
        ("b", "echo y"),
    ]


def test_a_continuation_line_of_a_lone_backslash_adds_nothing() -> None:
    text = "a:\n\techo one \\\n\\\n  two \\\n   three\n"
    assert [r.text for r in recipes(text, ["a"])] == ["echo one two three"]
