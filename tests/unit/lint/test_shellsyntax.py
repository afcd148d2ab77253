"""The shell syntax check behind GSL005: structures every POSIX shell rejects are found, at the
word at fault; what the check does not model is left unjudged, never guessed. Each expectation
was checked with `bash -n -c` and `dash -n -c` (tests/integration/lint/test_shell_syntax_oracle.py
does so for these and for generated scripts)."""

from __future__ import annotations

import pytest

from gpuship.lint.shellsyntax import syntax_problem

PARSES = [
    "if [ -f /x ]; then echo a; fi",
    'if [ "$(uname -m)" = x86_64 ]; then ARCH=amd64; else ARCH=arm64; fi && echo $ARCH',
    "for f in a b c; do echo $f; done",
    "for f do echo $f; done",
    "while true; do break; done",
    "until false; do :; done",
    'case "$TARGETARCH" in amd64) A=x86_64 ;; arm64) A=aarch64 ;; *) A=other ;; esac',
    "case $X in a|b) echo ab;; (c) echo c;; esac",
    "case $x in a) if true; then echo; fi;; esac",
    "{ echo a; echo b; } > /tmp/x",
    "(cd /src && make) && echo ok",
    "if true\nthen\n  echo a\nfi",
    "echo fi done esac then",
    'echo "fi" ; "done"',
    "if ! command -v git; then apt-get install -y git; fi",
    "if [ x ]; then if [ y ]; then echo; fi; elif [ z ]; then :; else :; fi",
]
# (script, the word at fault, what the message says)
FAILS = [
    ("if [ -f /x ]; then echo a fi", "if", "`if` has no `fi`"),
    ("if [ -f /x ]; then echo a; else echo b fi", "if", "`if` has no `fi`"),
    ("for f in a b; do echo $f done", "for", "`for` has no `done`"),
    ("while true; do echo x; done; done", "done", "`done` belongs to no open `do`"),
    ("{ echo a }", "{", "`{` has no `}`"),
    ("echo a; fi", "fi", "`fi` belongs to no open `if`"),
    ("if [ x ] then echo; fi", "fi", "the `if` before it has no `then` yet"),
    ("case $x in a) echo;;", "case", "`case` has no `esac`"),
    ("(cd /x && make", "(", "`(` has no `)`"),
]
# Syntax the check does not model: not judged, even where a shell would fail.
UNJUDGED = [
    "f() { echo a; }",
    "a=(1 2 3); echo ${a[0]}",
    # A bash array's items are words, reserved or not (dash refuses the array itself).
    'stages=(fi done) && echo "${stages[@]}"',
    "pkgs+=(\n  then\n  esac\n)\necho ok",
    "if [[ -f x ]]; then echo",
    "echo `date`; if true; then echo",
    "cat <<EOF\nif\nEOF",
    "exit 0; if true; then",
    "for ((i=0; i<3; i++)); do echo $i",
    "case $x in a) echo ;& b) echo ;; esac",
    'echo "$(printf "%s" ")")" && if true; then echo',
    "A=1 if true; then echo; fi",
]


@pytest.mark.parametrize("script", PARSES)
def test_a_script_every_shell_parses_has_no_problem(script: str) -> None:
    assert syntax_problem(script) is None


@pytest.mark.parametrize(("script", "word", "says"), FAILS)
def test_a_script_no_shell_parses_is_found_at_the_word_at_fault(
    script: str, word: str, says: str
) -> None:
    problem = syntax_problem(script)
    assert problem is not None
    assert script[problem.start : problem.end] == word
    assert says in problem.message


@pytest.mark.parametrize("script", UNJUDGED)
def test_what_the_check_does_not_model_is_not_judged(script: str) -> None:
    assert syntax_problem(script) is None
