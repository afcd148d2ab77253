"""Requirement strings, requirement files and the word processing COPY arguments get."""

from __future__ import annotations

import pytest

from gpuship.lint.checks.cuda import _apt_cuda, _one_release
from gpuship.lint.checks.leftovers import curl_short
from gpuship.lint.checks.security import is_secret_name
from gpuship.lint.packages import (
    WheelBuild,
    classify,
    editable,
    is_version_tag,
    parse_requirements,
    vcs_pinned,
    wheel_build,
)
from gpuship.lint.stages import expand, expand_word


@pytest.mark.parametrize(
    ("url", "pinned"),
    [
        ("git+https://github.com/o/r@v2.20.0", True),
        ("git+https://github.com/o/r@3f2c1a9e#egg=r", True),
        ("git+ssh://git@github.com/o/r.git@v1.0", True),
        ("git+ssh://git@github.com/o/r.git", False),
        ("git+https://github.com/o/r@main", False),
        ("git+https://github.com/o/r", False),
    ],
)
def test_vcs_ref_is_a_commit_or_release_tag(url: str, pinned: bool) -> None:
    assert vcs_pinned(url) is pinned
    assert classify(url, None, {}).pinned is pinned


def test_bare_names_are_not_ranges() -> None:
    assert classify("typing_extensions", None, {}).specifier == ""
    assert classify("accelerate[torch]", None, {}).specifier == ""
    assert classify("numpy>=2", None, {}).specifier == ">=2"


def test_editable_target_is_a_directory_or_a_vcs_url() -> None:
    assert editable("plugins", None, {}).kind == "path"
    assert editable(".[dev]", None, {}).kind == "path"
    assert editable("git+https://github.com/o/r@main#egg=r", None, {}).kind == "vcs"


def test_requirements_file_index_urls() -> None:
    parsed = parse_requirements(
        "--extra-index-url https://download.pytorch.org/whl/cu126\n-i https://pypi.org/simple\n"
        "-e ./local\ntorch==2.7.1\n"
    )
    assert parsed.index_urls == (
        "https://download.pytorch.org/whl/cu126",
        "https://pypi.org/simple",
    )
    assert [r.spec.kind for r in parsed.requirements] == ["path", "name"]


def test_default_word_of_an_arg_without_value() -> None:
    # `ARG REF` is unset unless --build-arg gives it: the build uses the default word.
    assert expand("${REF:-main}", {"REF": None}) == ("main", True)
    assert expand("${REF}", {"REF": None}) == ("${REF}", False)


def test_copy_arguments_lose_their_quotes() -> None:
    assert expand_word('"$APP"', {"APP": "service"}) == ("service", True)
    assert expand_word("'$APP'", {"APP": "service"}) == ("$APP", True)
    assert expand_word('"/srv/${APP}"/x', {"APP": "a"}) == ("/srv/a/x", True)


@pytest.mark.parametrize(
    ("package", "cuda"),
    [
        ("libcudnn8=8.9.7.29-1+cuda12.2", "12.2"),
        ("libnccl-dev=2.18.5-1+cuda12.2", "12.2"),
        ("cuda-cudart-12-1", "12.1"),
        ("libcublas-dev-12-4=12.4.5.8-1", "12.4"),
        ("libcudnn9-cuda-12", "12"),
        ("cuda-compat-12-6", None),
        ("python3-pip", None),
        ("libcudnn8", None),
    ],
)
def test_apt_package_cuda(package: str, cuda: str | None) -> None:
    assert _apt_cuda(package) == cuda


def test_specifiers_that_keep_torch_to_one_release() -> None:
    assert _one_release("==2.7.*") == "2.7"
    assert _one_release("~=2.7.0") == "2.7"
    assert _one_release("~=2.7") is None
    assert _one_release(">=2.7") is None


@pytest.mark.parametrize(
    ("flag", "letter", "found"),
    [
        ("-k", "k", ""),
        ("-fsSLk", "k", ""),
        ("-kfsSL", "k", "fsSL"),
        ("--insecure", "k", None),  # long options are matched as whole words elsewhere
        ("-fsSLo", "k", None),
        ("-okey", "k", None),  # `key` is the value of -o
        ("-fsSLo", "o", ""),  # the value is the next word
        ("-soout.whl", "o", "out.whl"),  # an attached value
        ("-fsSLO", "O", ""),
        ("-H", "O", None),
    ],
)
def test_curl_short_options(flag: str, letter: str, found: str | None) -> None:
    assert curl_short(flag, letter) == found


def test_switches_about_credentials_are_not_credentials() -> None:
    assert not is_secret_name("SCCACHE_S3_NO_CREDENTIALS")
    assert not is_secret_name("HF_HUB_DISABLE_TOKEN")
    assert is_secret_name("HF_TOKEN") and is_secret_name("AWS_SECRET_ACCESS_KEY")


@pytest.mark.parametrize(
    ("location", "build"),
    [
        (
            "https://github.com/o/fa/releases/download/v2.7.4/"
            "flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl",
            WheelBuild("flash-attn", "12", "2.6", "3.11"),
        ),
        (
            "flashinfer_python-0.2.2.post1+cu124torch2.6-cp38-abi3-linux_x86_64.whl",
            WheelBuild("flashinfer-python", "12.4", "2.6", None),
        ),
        (
            "https://download.pytorch.org/whl/cu129/torch-2.9.0%2Bcu129-cp310-cp310-"
            "manylinux_2_28_x86_64.whl",
            WheelBuild("torch", "12.9", None, "3.10"),
        ),
        (
            "/w/xformers-0.0.28.post3-cp311-cp311-manylinux_2_28_x86_64.whl",
            WheelBuild("xformers", None, None, "3.11"),
        ),
        ("pkg-1.0-py3-none-any.whl", WheelBuild("pkg", None, None, None)),
        ("dist/app-1.0.tar.gz", None),
        ("https://example.com/download?file=x", None),
    ],
)
def test_wheel_build_from_its_file_name(location: str, build: WheelBuild | None) -> None:
    assert wheel_build(location) == build


@pytest.mark.parametrize(
    ("ref", "tag"),
    [
        ("v2.10", True),
        ("2.0.1", True),
        ("core_v0.13.0", True),
        ("llvmorg-18.1.8", True),
        ("release_v2.10", False),
        ("release-1.2.3", False),
        ("core_r0.13.0", False),
        ("main", False),
    ],
)
def test_release_tags_by_shape(ref: str, tag: bool) -> None:
    assert is_version_tag(ref) is tag
