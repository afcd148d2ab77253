"""Which registry refusals make a release read its candidate again (`release/candidate.py`)."""

from __future__ import annotations

import pytest

from gpuship.errors import EXIT_USAGE, GpushipError, RegistryUnavailable
from gpuship.reference import parse_reference
from gpuship.registry.errors import NotFound, RegistryAuthError, RegistryRequestError
from gpuship.release.candidate import gone_while_running, refused_as_missing


@pytest.mark.parametrize(
    ("error", "missing"),
    [
        (RegistryRequestError("x", status=400, codes=("MANIFEST_BLOB_UNKNOWN",)), True),
        (RegistryRequestError("x", status=400, codes=("MANIFEST_UNKNOWN",)), True),
        (RegistryRequestError("x", status=400, codes=("BLOB_UNKNOWN",)), True),
        (NotFound("x", status=404), True),
        (RegistryRequestError("x", status=400, codes=("MANIFEST_INVALID",)), False),
        (RegistryRequestError("x", status=412), False),
        (RegistryAuthError("x", status=403, codes=("DENIED",)), False),
        (RegistryUnavailable("x"), False),
    ],
)
def test_only_a_refusal_for_something_missing_reads_the_candidate_again(
    error: GpushipError, missing: bool
):
    assert refused_as_missing(error) is missing


def test_the_error_names_the_candidate_and_what_is_gone_on_one_line():
    source = parse_reference("r.example/team/app@sha256:" + "a" * 64, default_tag=None)
    child = "sha256:" + "b" * 64
    error = gone_while_running(source, source.repository, f"its child manifest {child}")
    assert error.exit_code == EXIT_USAGE
    assert str(error) == (
        f"{source}: its child manifest {child} was deleted from r.example/team/app while the "
        "release ran (e.g. by retention)"
    )
