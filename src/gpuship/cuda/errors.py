"""Typed errors of the CUDA knowledge base and the requirement evaluator (all exit 2)."""

from __future__ import annotations

from gpuship.errors import InputError
from gpuship.redaction import shown


class UnknownVersion(InputError):
    """A CUDA release, torch release, GPU or arch the knowledge base does not know.

    Raised instead of guessing; `kind` says what was looked up and `value` what was asked.
    """

    def __init__(self, kind: str, value: str, detail: str = "") -> None:
        self.kind = kind
        self.value = value
        message = f"unknown {kind} {shown(value)}: not in the gpuship CUDA knowledge base"
        super().__init__(f"{message} ({detail})" if detail else message)


class InvalidVersion(InputError):
    """A version string that is not dot-separated integers (or a parseable arch/CC)."""

    def __init__(self, text: str, what: str = "version") -> None:
        self.text = text
        self.what = what
        super().__init__(f"invalid {what} {shown(text)}")


class InvalidRequirement(InputError):
    """An `NVIDIA_REQUIRE_*` value that nvidia-container-cli would reject.

    nvidia-container-cli fails the container with "invalid expression" for these; `term` is
    the factor at fault and `variable` the environment variable it came from.
    """

    def __init__(
        self, expression: str, term: str, reason: str, variable: str | None = None
    ) -> None:
        self.expression = expression
        self.term = term
        self.reason = reason
        self.variable = variable
        where = f"{variable}={shown(expression)}" if variable else shown(expression)
        super().__init__(f"invalid requirement {where}: term {shown(term)}: {reason}")
