"""Architecture coverage per GPU library."""

from __future__ import annotations

from gpuship.cuda.arch import parse_arch_list
from gpuship.image.analysis import ScannedLibrary
from gpuship.image.coverage import sm_targets, target_coverage


def _lib(path: str, sass: tuple[str, ...], ptx: tuple[str, ...] = ()) -> ScannedLibrary:
    return ScannedLibrary(path, 1, 0, sass, ptx)


def test_target_coverage_per_library() -> None:
    libraries = [
        _lib("a.so", ("sm_80", "sm_90")),
        _lib("b.so", ("sm_80",), ("compute_80",)),
        _lib("c.so", ("sm_75",)),
    ]
    coverage = target_coverage("sm_90", libraries)
    assert coverage.missing == ("/c.so",)  # sm_75 SASS does not run on 9.0, no PTX
    assert coverage.ptx_only == ("/b.so",)  # compute_80 PTX JIT-compiles for 9.0
    assert target_coverage("sm_86", libraries).missing == ("/c.so",)


def test_sm_targets_of_an_arch_list() -> None:
    assert sm_targets(parse_arch_list("9.0+PTX;8.0")) == ("sm_80", "sm_90")
    assert sm_targets(()) == ()


def test_arch_specific_code_runs_only_on_its_own_architecture() -> None:
    library = _lib("v.so", ("sm_90a", "sm_120f"), ("compute_90a",))
    assert target_coverage("sm_90", [library]).missing == ()
    assert target_coverage("sm_121", [library]).missing == ()  # family target: 12.x
    # Neither sm_90a SASS nor compute_90a PTX carries forward to Blackwell.
    assert target_coverage("sm_100", [library]).missing == ("/v.so",)
