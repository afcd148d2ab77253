"""`python -c` in a command substitution (issue #37): string operations on constants and
`os.environ` are evaluated, anything else is unknown."""

from __future__ import annotations

import pytest

from gpuship.lint.pyvalue import python_value

ENV = {"CUDA_VERSION": "12.1.1", "LATER": None}


@pytest.mark.parametrize(
    ("code", "printed"),
    [
        ("print('cu' + '12.1.1'.replace('.', '')[:3])", "cu121\n"),
        ("import os\nprint(os.getenv('CUDA_VERSION', 'none'))", "12.1.1\n"),
        ("import os; print(os.getenv('MISSING', 'none'))", "none\n"),
        ("import os; print(''.join(os.environ['CUDA_VERSION'].split('.')[:2]))", "121\n"),
        ("print(f\"cu{'12.4'.replace('.', '')}\")", "cu124\n"),
        ("print('2.6.0'.rsplit('.', 1)[0], 'x')", "2.6 x\n"),
        ("print(len('abc') + 1)", "4\n"),
    ],
)
def test_string_operations_are_evaluated(code: str, printed: str) -> None:
    assert python_value(code, ENV) == printed


@pytest.mark.parametrize(
    "code",
    [
        "import os; print(os.getenv('LATER', 'none'))",  # set at build time
        "import subprocess; print(1)",
        "import torch; print(torch.version.cuda)",
        "print(open('/etc/os-release').read())",
        "print('x' * 9)",
        "x = '1'\nprint(x)",
        "print(sep='')",
        "print(",
        "print(True)",
    ],
)
def test_anything_else_is_unknown(code: str) -> None:
    assert python_value(code, ENV) is None
