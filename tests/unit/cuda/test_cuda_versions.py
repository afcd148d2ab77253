"""Version parsing and ordering (CUDA and driver versions)."""

from __future__ import annotations

import pytest

from gpuship.cuda.errors import InvalidVersion
from gpuship.cuda.version import Version, cuda_version_from_nvml


@pytest.mark.parametrize(
    ("smaller", "larger"),
    [
        ("12.4", "12.4.1"),
        ("12.9", "12.10"),
        ("535.54.03", "535.104.05"),
        ("535.104.05", "535.104.6"),
        ("470.82.01", "525.60.13"),
        ("11.8", "12"),
    ],
)
def test_ordering_is_numeric(smaller: str, larger: str) -> None:
    assert Version.parse(smaller) < Version.parse(larger)
    assert Version.parse(larger) > Version.parse(smaller)


def test_trailing_zeros_are_equal_and_hash_alike() -> None:
    assert Version.parse("12.4") == Version.parse("12.4.0")
    assert hash(Version.parse("12.4")) == hash(Version.parse("12.4.0.0"))
    assert len({Version.parse("12.4"), Version.parse("12.4.0")}) == 1


def test_text_is_kept_and_parts_read() -> None:
    version = Version.parse("535.104.05")
    assert str(version) == "535.104.05"
    assert (version.major, version.minor, version.patch) == (535, 104, 5)
    assert str(Version.parse("12.4.1").major_minor()) == "12.4"
    assert Version.parse("12").minor == 0


@pytest.mark.parametrize("text", ["", "12.x", "v12.4", "12.4-rc1", "12..4", ".5", "12.4."])
def test_invalid_versions(text: str) -> None:
    with pytest.raises(InvalidVersion):
        Version.parse(text)


@pytest.mark.parametrize(("value", "text"), [(12040, "12.4"), (13000, "13.0"), (11080, "11.8")])
def test_nvml_cuda_version(value: int, text: str) -> None:
    assert str(cuda_version_from_nvml(value)) == text
