"""`gpuship kb` run as a real process: output, JSON result and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from json_results import check_output

pytestmark = pytest.mark.integration

REQUIRE_1263 = "cuda>=12.6 brand=tesla,driver>=535,driver<536 brand=nvidia,driver>=535,driver<536"


def gpuship(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "gpuship", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    check_output(args, done.stdout)
    return done


def test_driver_for() -> None:
    done = gpuship("--format", "json", "kb", "driver-for", "12.4")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result["min_driver"] == "550.54.14"
    assert result["minor_compat_floor"] == "525.60.13"


def test_driver_for_unknown_minor_reports_unknown() -> None:
    done = gpuship("kb", "driver-for", "12.7")
    assert done.returncode == 0
    assert "unknown" in done.stdout
    assert "525.60.13" in done.stdout


def test_driver_for_unknown_major_is_input_error() -> None:
    done = gpuship("kb", "driver-for", "14.0")
    assert done.returncode == 2
    assert "unknown cuda '14'" in done.stderr
    assert "Traceback" not in done.stderr


def test_torch_and_gpu_and_show() -> None:
    torch = gpuship("kb", "torch", "2.6.0")
    assert torch.returncode == 0
    assert "cu124" in torch.stdout and "cu126" in torch.stdout
    gpu = gpuship("kb", "gpu", "NVIDIA H100 80GB HBM3")
    assert gpu.returncode == 0
    assert "9.0" in gpu.stdout
    unknown = gpuship("kb", "gpu", "Radeon VII")
    assert unknown.returncode == 2
    show = gpuship("kb", "show")
    assert show.returncode == 0
    assert "12.8" in show.stdout and "570.26" in show.stdout


def test_check_require_satisfied() -> None:
    done = gpuship(
        "kb", "check-require", "--env", f"NVIDIA_REQUIRE_CUDA={REQUIRE_1263}",
        "--driver", "535.104.05", "--cuda", "12.2", "--gpu", "Tesla:8.0",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_require_unsatisfied_prints_cli_message() -> None:
    done = gpuship(
        "--format", "json", "kb", "check-require", "--env", f"NVIDIA_REQUIRE_CUDA={REQUIRE_1263}",
        "--driver", "535.104.05", "--cuda", "12.2", "--gpu", "GeForce:8.9",
    )  # fmt: skip
    assert done.returncode == 1
    report = json.loads(done.stdout)
    failure = report["result"]["failure"]
    assert failure["message"] == (
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.6, please "
        "update your driver to a newer version, or use an earlier cuda container"
    )
    assert failure["gpu_index"] == 0


def test_check_require_invalid_expression() -> None:
    done = gpuship(
        "kb", "check-require", "--env", "NVIDIA_REQUIRE_CUDA=cuda==12.4",
        "--driver", "535.104.05", "--cuda", "12.2",
    )  # fmt: skip
    assert done.returncode == 2
    assert "cuda==12.4" in done.stderr
    assert "Traceback" not in done.stderr


def test_check_require_legacy_and_no_gpu() -> None:
    done = gpuship(
        "kb",
        "check-require",
        "--env",
        "CUDA_VERSION=11.8.0",
        "--driver",
        "470.82.01",
        "--cuda",
        "11.4",
    )
    assert done.returncode == 1
    assert "cuda>=11.8" in done.stdout


def test_unknown_subcommand_is_usage_error() -> None:
    done = gpuship("kb", "nope")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_check_require_bad_gpu_flag() -> None:
    done = gpuship("kb", "check-require", "--gpu", "Tesla", "--driver", "535.104.05")
    assert done.returncode == 2
    assert "BRAND:MAJOR.MINOR" in done.stderr
