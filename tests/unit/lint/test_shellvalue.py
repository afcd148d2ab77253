"""The shell words a RUN computes from build args (issue #37): parameter expansion, command
substitution of echo/printf through tr/sed/cut/awk/xargs, and `python -c` string operations.
What the Dockerfile alone cannot decide is None, never a guess."""

from __future__ import annotations

import pytest

from gpuship.lint.shellvalue import MAX_VALUE, substitution, word_value

ENV = {"CUDA_VERSION": "12.1.1", "TORCH": "2.6.0", "EMPTY": "", "LATER": None}


@pytest.mark.parametrize(
    ("word", "value"),
    [
        # quoting
        ("'$CUDA_VERSION'", "$CUDA_VERSION"),
        ('"cu$CUDA_VERSION"', "cu12.1.1"),
        ('"a\\"b"', 'a"b'),
        ("a\\ b", "a b"),
        # parameter expansion
        ("${CUDA_VERSION//./}", "1211"),
        ("${CUDA_VERSION/./}", "121.1"),
        ("${CUDA_VERSION%.*}", "12.1"),
        ("${CUDA_VERSION%%.*}", "12"),
        ("${CUDA_VERSION#*.}", "1.1"),
        ("${CUDA_VERSION##*.}", "1"),
        ("${CUDA_VERSION/#12/13}", "13.1.1"),
        ("${CUDA_VERSION/%1/2}", "12.1.2"),
        ("${CUDA_VERSION:0:4}", "12.1"),
        ("${#TORCH}", "5"),
        ("${EMPTY:-cu121}", "cu121"),
        ("${EMPTY-cu121}", ""),
        ("${TORCH:+torch==$TORCH}", "torch==2.6.0"),
        ("cu$(echo ${CUDA_VERSION%.*} | tr -d .)", "cu121"),
        # command substitution
        ("$(echo $CUDA_VERSION | tr -d .)", "1211"),
        ("$(echo ${CUDA_VERSION} | cut -d. -f1,2 | tr -d .)", "121"),
        ("$(echo $CUDA_VERSION | cut -d '.' -f 1-2)", "12.1"),
        ("$(echo $CUDA_VERSION | sed 's/\\.//g')", "1211"),
        ("$(echo $CUDA_VERSION | sed -E 's/^([0-9]+)\\.([0-9]+).*/\\1\\2/')", "121"),
        ("$(echo $CUDA_VERSION | sed 's/\\([0-9]*\\)\\.\\([0-9]*\\).*/\\1\\2/')", "121"),
        ("$(echo $CUDA_VERSION | awk -F. '{print $1$2}')", "121"),
        ("$(echo $CUDA_VERSION | awk -F. '{print $1 \".\" $2}')", "12.1"),
        ("$(echo $CUDA_VERSION | tr . _)", "12_1_1"),
        ("$(printf 'cu%s%s' 12 4)", "cu124"),
        ("$(echo ' a  b ' | xargs)", "a b"),
        (
            "$(python3 -c \"print('cu' + '${CUDA_VERSION}'.replace('.', '')[:3])\")",
            "cu121",
        ),
        (
            '$(python -c \'import os; print("".join(os.environ["CUDA_VERSION"].split(".")[:2]))\')',
            "121",
        ),
        ("$(python -c \"print(f'cu{12}{4}')\")", "cu124"),
    ],
)
def test_words_a_build_arg_decides(word: str, value: str) -> None:
    assert word_value(word, ENV) == value


@pytest.mark.parametrize(
    "word",
    [
        "$LATER",  # an ARG without a value: decided at build time
        "$NOT_DECLARED",  # from the base image's environment, perhaps
        "${LATER//./}",
        "$(cat /etc/cuda_version)",
        "cu$(echo $LATER | tr -d .)",
        "$(nvcc --version | sed -n 's/.*release //p')",
        "$(echo $CUDA_VERSION; echo more)",
        "$(echo $CUDA_VERSION > f)",
        "`echo 1`",
        "$((1 + 2))",
        "$1",
        "'unclosed",
        "$(python -c 'import torch; print(torch.version.cuda)')",
        "$(python -c 'print(open(\"/etc/os-release\").read())')",
        "$(python -c 'print(\"x\" * 9)')",
        "$(echo $CUDA_VERSION | tr '[:digit:]' x)",
        "$(echo $CUDA_VERSION | sed 's/a/b/;s/c/d/')",
        "$(echo $CUDA_VERSION | cut -f1 -c2)",
    ],
)
def test_what_the_dockerfile_cannot_decide_is_unknown(word: str) -> None:
    assert word_value(word, ENV) is None


def test_values_are_bounded() -> None:
    huge = {"A": "x" * MAX_VALUE}
    assert word_value("$A$A", huge) is None
    assert substitution("echo $A $A", huge) is None
