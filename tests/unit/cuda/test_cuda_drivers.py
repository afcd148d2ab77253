"""CUDA -> driver lookups and the can-this-driver-run-it verdict."""

from __future__ import annotations

import pytest

from gpuship.cuda.drivers import (
    Compatibility,
    compat_cuda_from_package,
    cuda_for_driver,
    driver_verdict,
    forward_compat_brand,
    known_cuda_releases,
    min_driver_for,
    minor_compat_floor,
    toolkit_release,
)
from gpuship.cuda.errors import UnknownVersion
from gpuship.cuda.version import Version


@pytest.mark.parametrize(
    ("cuda", "driver"),
    [
        ("12.4", "550.54.14"),  # major.minor -> GA row
        ("12.4.0", "550.54.14"),
        ("12.4.1", "550.54.15"),
        ("12.2.2", "535.104.05"),
        ("12.8", "570.26"),
        ("11.8", "520.61.05"),
        ("11.0", "450.51.05"),  # GA, not the 11.0.1 RC
        ("13.0", "580.65.06"),
        ("13.2.2", "595.71.05"),
        ("10.2", "440.33"),
    ],
)
def test_min_driver_for(cuda: str, driver: str) -> None:
    assert min_driver_for(cuda) == Version.parse(driver)


@pytest.mark.parametrize("cuda", ["12.7", "12.3.2", "9.0", "14.0", "13.4"])
def test_unknown_release_is_not_guessed(cuda: str) -> None:
    with pytest.raises(UnknownVersion) as excinfo:
        min_driver_for(cuda)
    assert excinfo.value.kind == "cuda"
    assert excinfo.value.exit_code == 2


def test_toolkit_release_label() -> None:
    assert toolkit_release("12.6.3").label == "CUDA 12.6 Update 3"


def test_known_releases_ascending_major_minor() -> None:
    releases = known_cuda_releases()
    assert list(releases) == sorted(releases)
    assert Version.parse("12.7") not in releases
    assert all(len(r.parts) == 2 for r in releases)


@pytest.mark.parametrize(
    ("cuda", "floor"),
    [
        ("11.0", "450.80.02"),
        ("11.8", "450.80.02"),
        ("12.0", "525.60.13"),
        ("12.9.1", "525.60.13"),
        ("12.7", "525.60.13"),  # a minor missing from the table still gets its family floor
        ("13.5", "580"),
    ],
)
def test_minor_compat_floor(cuda: str, floor: str) -> None:
    assert minor_compat_floor(cuda) == Version.parse(floor)


def test_no_minor_compat_before_cuda_11() -> None:
    assert minor_compat_floor("10.2") is None


def test_minor_compat_floor_unknown_major() -> None:
    with pytest.raises(UnknownVersion):
        minor_compat_floor("14.0")


@pytest.mark.parametrize(
    ("driver", "cuda"),
    [
        ("535.104.05", "12.2"),
        ("550.54.14", "12.4"),
        ("550.127.05", "12.4"),
        ("470.82.01", "11.4"),
        ("580.65.06", "13.0"),
        ("999.1", "13.3"),  # newer than every row: highest known (a lower bound)
    ],
)
def test_cuda_for_driver(driver: str, cuda: str) -> None:
    assert cuda_for_driver(driver) == Version.parse(cuda)


def test_cuda_for_driver_too_old() -> None:
    assert cuda_for_driver("390.1") is None


@pytest.mark.parametrize(
    ("brand", "allowed"),
    [("Tesla", True), ("tesla", True), ("NvidiaRTX", True), ("GeForce", False),
     ("TITAN", False), ("GeForceRTX", False), ("NVS", False), (None, False)],
)  # fmt: skip
def test_forward_compat_brand(brand: str | None, allowed: bool) -> None:
    assert forward_compat_brand(brand) is allowed


def test_compat_package_name() -> None:
    assert compat_cuda_from_package("cuda-compat-12-4") == Version.parse("12.4")
    assert compat_cuda_from_package("cuda-cudart-12-4") is None


@pytest.mark.parametrize(
    ("image", "driver", "host_cuda", "brand", "compat", "status"),
    [
        ("12.4", "550.54.15", "12.4", "Tesla", None, Compatibility.OK),
        ("12.2", "550.54.15", "12.4", "GeForce", None, Compatibility.OK),
        ("12.8", "535.104.05", "12.2", "GeForce", None, Compatibility.MINOR_COMPAT),
        ("12.8", "520.61.05", "11.8", "Tesla", None, Compatibility.NO),
        ("13.0", "575.57.08", "12.9", "Tesla", None, Compatibility.NO),
        ("13.0", "575.57.08", "12.9", "Tesla", "13.0", Compatibility.FORWARD_COMPAT),
        ("13.0", "575.57.08", "12.9", "GeForce", "13.0", Compatibility.NO),
        ("12.4", "470.82.01", "11.4", "Tesla", "12.4", Compatibility.FORWARD_COMPAT),
        ("12.4", "470.82.01", "11.4", "Tesla", "12.2", Compatibility.NO),  # compat too old
        ("11.8", "450.80.02", None, None, None, Compatibility.MINOR_COMPAT),  # host from table
        ("11.8", "450.51.06", None, None, None, Compatibility.NO),  # below the 11.x floor
        ("12.7", "535.104.05", "12.2", None, None, Compatibility.MINOR_COMPAT),
    ],
)
def test_driver_verdict(
    image: str,
    driver: str,
    host_cuda: str | None,
    brand: str | None,
    compat: str | None,
    status: Compatibility,
) -> None:
    verdict = driver_verdict(image, driver, host_cuda=host_cuda, brand=brand, compat_cuda=compat)
    assert verdict.status is status
    assert verdict.ok is (status is not Compatibility.NO)
    if status is Compatibility.MINOR_COMPAT:
        assert "PTX" in verdict.reason
    if status is Compatibility.NO:
        assert verdict.fix


def test_verdict_no_names_driver_and_804_for_geforce() -> None:
    verdict = driver_verdict(
        "13.0", "575.57.08", host_cuda="12.9", brand="GeForce", compat_cuda="13.0"
    )
    assert "580.65.06" in verdict.reason
    assert "804" in verdict.reason
    assert verdict.required_driver == Version.parse("580.65.06")


def test_verdict_unknown_minor_has_no_required_driver() -> None:
    verdict = driver_verdict("12.7", "520.61.05", host_cuda="11.8")
    assert verdict.status is Compatibility.NO
    assert verdict.required_driver is None


def test_verdict_unknown_major_raises() -> None:
    with pytest.raises(UnknownVersion):
        driver_verdict("14.0", "999.1")
