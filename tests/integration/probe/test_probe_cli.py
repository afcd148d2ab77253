"""`gpuship probe` against the stand-in model server under the bed's real Docker engine.

Each image is the same static server in a FROM scratch image; its ENV plants the behaviour
under test. GPU readings come from the NVML stand-in, fed by the server itself (memory held
per request in flight), so peaks and the per-container process memory are the server's.
The tests run as users run the command: a subprocess with GITHUB_ACTIONS set, reading back
the exit code, the step outputs, the job summary and the JSON report.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from bed import hosts
from bed.action_step import start_action_step
from bed.docker_engine import DockerEngine
from bed.probe_server import (
    bed_target,
    build_server,
    build_server_image,
    free_port,
    live_host,
)
from gpuship.docker.engine import Container, Engine
from gpuship.docker.service import PROBE_LABEL, ServiceSpec, running_service
from gpuship.errors import Interrupted
from gpuship.signals import STOP_SIGNALS
from json_results import checked

pytestmark = pytest.mark.integration

REPOSITORY_ROOT = Path(__file__).resolve().parents[3]
BUILD_CACHE = REPOSITORY_ROOT / "tests" / ".build"
HostEnv = Callable[[Mapping[str, Any]], dict[str, str]]
# An L4 (23034 MiB): the model's weights take 14000 MiB, each request in flight 1024 MiB, and
# each KiB of request body 1024 MiB more (long prompts need KV cache).
GPU = {"MEM_TOTAL_MIB": "23034", "MEM_BASE_MIB": "14000", "MEM_PER_REQUEST_MIB": "1024"}
LONG_PROMPTS = {"MEM_PER_BODY_KIB_MIB": "1024"}
# The bed runs beside other test suites on two cores: the generator may be a few ms late
# there, which the probe reports; steps stay judged unless it is badly behind.
BED_MAX_LAG_MS = 50


@pytest.fixture(scope="session")
def server_binary() -> Path:
    return build_server(BUILD_CACHE)


@dataclass(frozen=True)
class ProbeRun:
    returncode: int
    stderr: str
    report: dict[str, Any]
    summary: str
    outputs: dict[str, str]


@pytest.fixture
def run_probe(
    tmp_path: Path, docker_engine: DockerEngine, nvml_host: HostEnv
) -> Iterator[Callable[..., ProbeRun]]:
    """Write gpuship.yaml (probe: section) and run `gpuship probe IMAGE ARGS`."""

    def run(image: str, probe: Mapping[str, Any], *args: str) -> ProbeRun:
        live_dir = tmp_path / "nvml"
        live_dir.mkdir(exist_ok=True)
        target = {**probe.get("target", {}), **bed_target(live_dir)}
        config = {"probe": {**probe, "target": target, "max-lag-ms": BED_MAX_LAG_MS}}
        (tmp_path / "gpuship.yaml").write_text(yaml.safe_dump(config))
        summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
        for file in (summary, outputs):
            file.write_text("")
        env = {
            **nvml_host(live_host(hosts.L4_550, live_dir / "live.json")),
            **docker_engine.env,
            "GITHUB_ACTIONS": "true",
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_OUTPUT": str(outputs),
        }
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "gpuship",
                "probe",
                image,
                *args,
                "--format",
                "json",
                "--output",
                str(tmp_path / "probe.json"),
            ],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=400,
        )
        report_file = tmp_path / "probe.json"
        report = checked(report_file.read_text()) if report_file.exists() else {}
        return ProbeRun(
            completed.returncode,
            completed.stderr,
            report,
            summary.read_text(),
            _outputs(outputs.read_text()),
        )

    yield run


def _outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT entries: `name=value`, or `name<<delimiter`, lines, delimiter."""
    lines = text.splitlines()
    found: dict[str, str] = {}
    index = 0
    while index < len(lines):
        if "<<" in lines[index] and "=" not in lines[index].split("<<")[0]:
            name, _, delimiter = lines[index].partition("<<")
            end = lines.index(delimiter, index + 1)
            found[name] = "\n".join(lines[index + 1 : end])
            index = end + 1
        else:
            name, _, value = lines[index].partition("=")
            found[name] = value
            index += 1
    return found


def _checks(run: ProbeRun, rule: str) -> list[dict[str, str]]:
    return [c for c in run.report["result"]["checks"] if c["rule"] == rule]


def test_a_p99_regression_a_mean_hides_fails_against_stable(
    run_probe: Callable[..., ProbeRun], docker_engine: DockerEngine, server_binary: Path
) -> None:
    # A mean no worse: stable is 20-24 ms always (mean 22 ms); the candidate is 12 ms faster
    # but one request in twenty takes 150 ms more (mean about 17.5 ms). The margin leaves room
    # for a loaded runner, which inflates the candidate's slow tail more than stable's.
    stable = build_server_image(
        docker_engine,
        server_binary,
        "probe-regression:stable",
        {**GPU, "LATENCY_MS": "20", "JITTER_MS": "4"},
    )
    candidate = build_server_image(
        docker_engine,
        server_binary,
        "probe-regression:candidate",
        {**GPU, "LATENCY_MS": "8", "JITTER_MS": "4", "TAIL_PERMILLE": "50", "TAIL_MS": "150"},
    )
    profile = {"warmup-s": 0.5, "steps": [{"rate": 50, "duration-s": 5}]}
    compare = {"trials": 3, "metrics": ["p99", "mean"], "max-regression": 0.1}

    run = run_probe(
        candidate,
        {"profile": profile, "shortage": {"enabled": False}, "compare": compare},
        "--stable",
        stable,
    )

    assert run.returncode == 1, run.stderr
    assert run.outputs["verdict"] == "fail"
    (p99,) = [c for c in run.report["result"]["comparisons"] if c["figure"] == "p99"]
    (mean,) = [c for c in run.report["result"]["comparisons"] if c["figure"] == "mean"]
    assert p99["ratio"]["low"] > 1.1, p99
    # A gate on the mean would have passed it: the mean is not certainly 10 % worse.
    assert mean["ratio"]["low"] <= 1.1, mean
    failing = [c for c in _checks(run, "GSP301") if c["status"] == "fail"]
    assert [c["subject"] for c in failing] == ["step 50/s p99"]
    assert "GSP301" in run.summary and "Candidate vs stable" in run.summary
    assert "xychart-beta" in run.summary
    assert run.outputs["reason"].startswith("step 50/s p99: candidate")
    # Candidate and stable alternated: C S C S C S.
    roles = [t["role"] for t in run.report["result"]["trials"]]
    assert roles == ["candidate", "stable"] * 3


def test_an_oom_crash_under_memory_shortage_fails(
    run_probe: Callable[..., ProbeRun],
    docker_engine: DockerEngine,
    server_binary: Path,
    tmp_path: Path,
) -> None:
    image = build_server_image(
        docker_engine,
        server_binary,
        "probe-oom:candidate",
        {**GPU, **LONG_PROMPTS, "LATENCY_MS": "20", "OVERLOAD": "crash"},
    )
    # The shortage sends 4 KiB prompts: 5 GiB each, so two in flight exhaust the L4.
    long_prompt = {"method": "POST", "path": "/generate", "body": "x" * 4096}
    (tmp_path / "long.jsonl").write_text(json.dumps(long_prompt) + "\n")
    shortage = {
        "rate": 100,
        "duration-s": 2,
        "requests-file": "long.jsonl",
        "cooldown-s": 0.5,
        "recovery-rate": 10,
        "recovery-duration-s": 1,
    }

    run = run_probe(
        image,
        {
            "profile": {"warmup-s": 0, "steps": [{"rate": 20, "duration-s": 2}]},
            "shortage": shortage,
        },
        "--no-compare",
    )

    assert run.returncode == 1, run.stderr
    (crash,) = _checks(run, "GSP201")
    assert crash["status"] == "fail"
    assert "exited 1" in crash["message"] and "CUDA out of memory" in crash["message"]
    (recovery,) = _checks(run, "GSP203")
    assert recovery["status"] == "fail"
    (overload,) = run.report["result"]["images"][0]["overloads"]
    assert overload["behaviour"] == "crashed" and not overload["recovered"]
    assert any("torch.OutOfMemoryError" in line for line in overload["oom_lines"])
    assert run.outputs["overload"] == "crashed"
    assert "crashed" in run.summary and "GSP201" in run.summary


def test_an_image_that_sheds_cleanly_within_its_slos_passes(
    run_probe: Callable[..., ProbeRun],
    docker_engine: DockerEngine,
    server_binary: Path,
    tmp_path: Path,
) -> None:
    image = build_server_image(
        docker_engine,
        server_binary,
        "probe-shed:candidate",
        # 256 MiB a request: room for 35 in flight, far more than 130/s x 25 ms even when a
        # loaded machine stretches them; two long prompts (4 GiB each) still fill the GPU.
        {
            **GPU,
            **LONG_PROMPTS,
            "MEM_PER_REQUEST_MIB": "256",
            "LATENCY_MS": "20",
            "JITTER_MS": "5",
            "OVERLOAD": "shed",
        },
    )
    long_prompt = {"method": "POST", "path": "/generate", "body": "x" * 4096}
    (tmp_path / "long.jsonl").write_text(json.dumps(long_prompt) + "\n")
    probe = {
        # About 480 and 520 requests a step (Poisson): enough for a p99 with both bounds of its
        # interval (380 are needed).
        "profile": {
            "warmup-s": 0.5,
            "steps": [{"rate": 40, "duration-s": 12}, {"rate": 130, "duration-s": 4}],
        },
        "shortage": {
            "rate": 100,
            "duration-s": 2,
            "requests-file": "long.jsonl",
            "cooldown-s": 0.5,
            "recovery-rate": 10,
            "recovery-duration-s": 2,
        },
        "slo": {
            "p99-ms": 200,
            "error-rate": 0.01,
            "min-throughput-rps": 100,
            "max-gpu-memory-fraction": 0.95,
        },
    }

    run = run_probe(image, probe, "--no-compare")

    assert run.returncode == 0, (run.stderr, run.report.get("result", {}).get("checks"))
    assert run.outputs["verdict"] == "ok", run.report["result"]["checks"]
    (overload,) = run.report["result"]["images"][0]["overloads"]
    assert overload["behaviour"] == "shed" and overload["recovered"]
    assert overload["shortage"]["rejected"] > 0
    assert set(overload["shortage"]["errors"]) == {"status 503"}
    candidate = run.report["result"]["images"][0]
    # GPU memory as the server held it under normal load: weights plus requests in flight.
    total = hosts.L4_550["gpus"][0]["memory_total"]
    assert 14000 * 2**20 / total < candidate["peak_gpu_memory_fraction"] <= 0.95
    # NVML's process list, mapped to the container's pids, saw the server's own memory.
    assert candidate["peak_process_gpu_bytes"] >= 14000 * 2**20
    statuses = {(c["rule"], c["subject"]): c["status"] for c in run.report["result"]["checks"]}
    assert statuses[("GSP102", "step 130/s")] == statuses[("GSP102", "step 40/s")] == "ok"
    assert statuses[("GSP105", "step 130/s")] == "ok"
    assert statuses[("GSP106", "GPU")] == "ok"
    gpu = run.report["result"]["trials"][0]["gpu"]
    assert len(gpu["samples"]) >= 50  # about 10 Hz over the run
    assert "GPU memory over time" in run.summary and "shed" in run.summary


@pytest.mark.parametrize(
    ("stream", "kind"),
    [("empty", "no-tokens"), ("garbage", "not-sse"), ("cut", "protocol")],
)
def test_a_server_that_streams_no_tokens_or_garbage_fails(
    run_probe: Callable[..., ProbeRun],
    docker_engine: DockerEngine,
    server_binary: Path,
    stream: str,
    kind: str,
) -> None:
    # Every answer is a 200 in good time; what it streams is no completion: role-only and
    # empty deltas with a usage chunk claiming tokens, an HTML page, or tokens then a
    # connection closed before the body's end. Counted as successes, they used to pass.
    image = build_server_image(
        docker_engine,
        server_binary,
        f"probe-stream-{stream}:candidate",
        {**GPU, "LATENCY_MS": "10", "TOKEN_MS": "2", "STREAM": stream},
    )
    probe = {
        "request": {"kind": "chat", "max-tokens": 8},
        "profile": {"warmup-s": 0, "steps": [{"rate": 20, "duration-s": 2}]},
        "shortage": {"enabled": False},
        "slo": {"ttft-p99-ms": 5000},
    }

    run = run_probe(image, probe, "--no-compare")

    assert run.returncode == 1, run.stderr
    assert run.outputs["verdict"] == "fail"
    (errors,) = _checks(run, "GSP104")
    assert errors["status"] == "fail"
    assert errors["message"].startswith("100.0% of ")
    assert errors["message"].endswith(f"requests failed (SLO 1.0%): {kind} x{_count(errors)}")
    (step,) = run.report["result"]["images"][0]["steps"]
    assert step["errors"] == {kind: step["requests"]} and step["ok"] == 0
    # No TTFT is made up from events without a token: the TTFT SLO has nothing to judge.
    (ttft,) = _checks(run, "GSP103")
    assert (ttft["status"], ttft["message"]) == (
        "warn",
        "p99 TTFT: unknown, no successful request",
    ), ttft
    assert run.outputs["reason"].startswith("step 20/s: 100.0% of")


def _count(check: dict[str, str]) -> int:
    """The N of "100.0% of N requests failed" in a GSP104 message."""
    return int(check["message"].split(" of ", 1)[1].split(" ", 1)[0])


def test_job_mode_reports_steps_and_peak_memory(
    run_probe: Callable[..., ProbeRun], docker_engine: DockerEngine, server_binary: Path
) -> None:
    image = build_server_image(
        docker_engine,
        server_binary,
        "probe-train:ok",
        {**GPU, "MODE": "train", "STEPS": "5", "STEP_MS": "100", "MEM_PER_STEP_MIB": "1000"},
    )
    job = {"timeout-s": 60, "step-pattern": r"^step \d+ .* step_ms=(?P<ms>\d+)$"}

    run = run_probe(image, {"job": job}, "--job")

    assert run.returncode == 0, run.stderr
    result = run.report["result"]
    assert result["mode"] == "job" and result["exit_code"] == 0
    assert result["step_seconds"] == [0.1] * 5
    # Weights plus five steps of 1000 MiB, of the L4's 23034 MiB.
    assert result["peak_gpu_memory_fraction"] == pytest.approx(19000 / 23034, abs=0.01)
    assert run.outputs["steps"] == "5" and run.outputs["verdict"] == "ok"


def test_job_mode_finds_a_cuda_out_of_memory(
    run_probe: Callable[..., ProbeRun], docker_engine: DockerEngine, server_binary: Path
) -> None:
    image = build_server_image(
        docker_engine,
        server_binary,
        "probe-train:oom",
        {**GPU, "MODE": "train", "STEPS": "10", "STEP_MS": "50", "MEM_PER_STEP_MIB": "3000"},
    )

    run = run_probe(image, {"job": {"timeout-s": 60}}, "--job")

    assert run.returncode == 1, run.stderr
    (finding,) = run.report["findings"]
    assert finding["rule"] == "GSP501"
    assert "CUDA out of memory" in finding["message"]
    assert run.report["result"]["exit_code"] == 1
    assert "GSP501" in run.summary


def test_job_mode_finds_the_host_oom_killer(
    run_probe: Callable[..., ProbeRun], docker_engine: DockerEngine, server_binary: Path
) -> None:
    # A data loader that leaks 16 MiB of host memory a step, in a container limited to 64 MiB.
    image = build_server_image(
        docker_engine,
        server_binary,
        "probe-train:leak",
        {**GPU, "MODE": "train", "STEPS": "50", "STEP_MS": "20", "HOST_MEM_PER_STEP_MIB": "16"},
    )

    run = run_probe(image, {"target": {"memory-limit": "64m"}, "job": {"timeout-s": 60}}, "--job")

    assert run.returncode == 1, run.stderr
    (finding,) = run.report["findings"]
    assert finding["rule"] == "GSP501"
    assert finding["message"] == "ran out of memory: killed by the host's OOM killer"
    assert run.report["result"]["exit_code"] == 137


def test_an_image_that_never_becomes_ready_fails_with_its_log(
    run_probe: Callable[..., ProbeRun], docker_engine: DockerEngine, server_binary: Path
) -> None:
    # The train mode with no steps exits at once: a server that dies while starting.
    image = build_server_image(
        docker_engine, server_binary, "probe-dies:candidate", {"MODE": "train", "STEPS": "0"}
    )

    run = run_probe(image, {"profile": {"steps": [{"rate": 5, "duration-s": 1}]}}, "--no-compare")

    assert run.returncode == 1, run.stderr
    (failure,) = _checks(run, "GSP101")
    assert failure["status"] == "fail"
    assert "exited while starting (exit code 0)" in failure["message"]
    assert "training done" in failure["message"]
    leftover = docker_engine.client.containers.list(all=True, filters={"label": PROBE_LABEL})
    assert leftover == []


def _endless_probe(tmp_path: Path, docker_engine: DockerEngine, server_binary: Path) -> str:
    """The image of a server and a gpuship.yaml whose probe of it runs five minutes."""
    image = build_server_image(
        docker_engine, server_binary, "probe-cancel:candidate", {**GPU, "LATENCY_MS": "5"}
    )
    port = free_port()
    config = {
        "probe": {
            "target": {"network": "host", "port": port, "gpus": "none", "env": {"PORT": str(port)}},
            "profile": {"steps": [{"rate": 5, "duration-s": 300}]},
        }
    }
    (tmp_path / "gpuship.yaml").write_text(yaml.safe_dump(config))
    return image


def test_a_cancelled_probe_removes_its_container(
    tmp_path: Path, docker_engine: DockerEngine, server_binary: Path, nvml_host: HostEnv
) -> None:
    image = _endless_probe(tmp_path, docker_engine, server_binary)
    env = {**nvml_host(hosts.L4_550), **docker_engine.env}
    process = subprocess.Popen(
        [sys.executable, "-m", "gpuship", "probe", image, "--no-compare"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_until_under_load(process, docker_engine)
        # What a cancelled GitHub job does: SIGINT, then SIGTERM; SIGTERM alone is the harder.
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, stderr  # 128 + SIGTERM, as a shell reports it
    assert "gpuship: interrupted by SIGTERM" in stderr
    leftover = docker_engine.client.containers.list(all=True, filters={"label": PROBE_LABEL})
    assert leftover == []


def _wait_until_under_load(process: subprocess.Popen[str], docker_engine: DockerEngine) -> None:
    """Until the probe's container runs and its load has started (the process still alive)."""
    deadline = time.monotonic() + 60
    while not docker_engine.client.containers.list(filters={"label": PROBE_LABEL}):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.2)
    time.sleep(1.5)  # under load by now


def test_a_cancelled_probe_action_step_removes_its_container(
    tmp_path: Path, docker_engine: DockerEngine, server_binary: Path, nvml_host: HostEnv
) -> None:
    """GitHub signals a cancelled step's own process only (the bash running its `run:`),
    never its children. The probe action's step, run as the runner runs it, must pass SIGINT
    on to gpuship: the container is removed and the step outputs say the run was stopped."""
    image = _endless_probe(tmp_path, docker_engine, server_binary)
    env = {
        **nvml_host(hosts.L4_550),
        **docker_engine.env,
        "INPUT_IMAGE": image,
        "INPUT_STABLE": "",
        "INPUT_COMPARE": "false",
        "INPUT_TRIALS": "",
        "INPUT_URL": "",
        "INPUT_JOB": "false",
        "INPUT_JSON_FILE": "probe.json",
        "INPUT_CONFIG": "",
        "INPUT_FAIL_ON": "",
    }
    process, outputs = start_action_step("probe", tmp_path, env)
    try:
        _wait_until_under_load(process, docker_engine)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # gpuship too, where it never got the signal
        process.communicate()
        leftover = docker_engine.client.containers.list(all=True, filters={"label": PROBE_LABEL})
        for container in leftover:
            container.remove(force=True)
    assert process.returncode == 130, stderr
    assert "gpuship: interrupted by SIGINT" in stderr
    assert _outputs(outputs.read_text())["exit-code"] == "130"
    assert leftover == []


def test_a_signal_during_the_removal_waits_until_the_container_is_gone(
    docker_engine: DockerEngine, server_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitHub sends SIGINT, then SIGTERM: the second may land while the first's clean-up
    removes the container. It is held until the container is gone, then raised."""
    image = build_server_image(
        docker_engine, server_binary, "probe-cancel:candidate", {**GPU, "LATENCY_MS": "5"}
    )
    port = free_port()
    spec = ServiceSpec(image, port, network="host", gpus="none", env={"PORT": str(port)})
    remove = Container.remove

    def remove_under_sigterm(container: Container) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before the next line
        remove(container)

    monkeypatch.setattr(Container, "remove", remove_under_sigterm)

    def interrupt(signum: int, _frame: object) -> None:
        raise Interrupted(signum, signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, interrupt) for signum in STOP_SIGNALS}
    try:
        with (
            pytest.raises(Interrupted) as raised,
            Engine.connect(docker_engine.env) as engine,
            running_service(engine, spec, "held-signal"),
        ):
            raise Interrupted(signal.SIGINT, "SIGINT")  # the first signal, in the probe's work
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        leftover = docker_engine.client.containers.list(all=True, filters={"label": PROBE_LABEL})
        for container in leftover:  # what an abandoned removal left, for the later tests
            container.remove(force=True)
    assert leftover == []
    assert raised.value.name == "SIGTERM"  # the held one, raised once the container was gone
    assert isinstance(raised.value.__context__, Interrupted)


def test_a_bad_probe_section_is_a_usage_error_naming_the_line(
    tmp_path: Path, docker_engine: DockerEngine
) -> None:
    (tmp_path / "gpuship.yaml").write_text("probe:\n  slo:\n    p99-ms: -3\n")
    completed = subprocess.run(
        [sys.executable, "-m", "gpuship", "probe", "any:image"],
        env={**os.environ, **docker_engine.env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2
    assert completed.stderr.startswith("gpuship: error: ")
    assert "gpuship.yaml:3:5: probe.slo.p99-ms: Input should be greater than 0" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_url_mode_streams_chat_and_reports_ttft_itl_and_goodput(
    tmp_path: Path, server_binary: Path, nvml_host: HostEnv
) -> None:
    # A server someone else started (here: the stand-in, on this host), probed by URL.
    port = free_port()
    server = subprocess.Popen(
        [str(server_binary)],
        env={**os.environ, **GPU, "PORT": str(port), "LATENCY_MS": "30", "TOKEN_MS": "10"},
        stdout=subprocess.DEVNULL,
    )
    config = {
        "probe": {
            "request": {"kind": "chat", "max-tokens": 8},
            "profile": {
                "arrival": "constant",
                "warmup-s": 0,
                "steps": [{"rate": 10, "duration-s": 2}],
            },
            "shortage": {"enabled": False},
            "slo": {"ttft-p99-ms": 500, "goodput-ttft-ms": 500, "goodput-tpot-ms": 100},
            "max-lag-ms": BED_MAX_LAG_MS,
        }
    }
    (tmp_path / "gpuship.yaml").write_text(yaml.safe_dump(config))
    try:
        time.sleep(0.3)
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "gpuship",
                "probe",
                "my-llm",
                "--url",
                f"http://127.0.0.1:{port}",
                "--format",
                "json",
            ],
            env=nvml_host(hosts.L4_550),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.kill()
        server.wait()
    assert completed.returncode == 0, completed.stderr
    result = checked(completed.stdout)["result"]
    (step,) = result["images"][0]["steps"]
    assert step["ok"] == step["requests"] == 20
    assert 30 <= step["ttft_ms"]["p50"]["value"] < 300
    assert 8 <= step["itl_p50_ms"] < 100
    assert step["output_tokens_per_s"] == pytest.approx(80)
    assert step["goodput_rps"] == pytest.approx(10)
    # One image, started by someone else: nothing to compare, no container to watch.
    assert result["comparisons"] == [] and len(result["trials"]) == 1


# A known queue: ten requests sent 10 ms apart to a server that runs one at a time for 500 ms,
# under a client cap of 4. Four hold a slot (in flight), six wait for one on the client, and
# three of the four at the server wait in its own queue while it runs the first. The server
# answers nothing but 503 for its first 2.5 s (loading the model), then logs the line vLLM
# logs when its weights are loaded.
KNOWN_QUEUE = {**GPU, "STARTUP_MS": "2500", "MAX_RUNNING": "1", "LATENCY_MS": "500"}
TEN_AT_ONCE = {
    "arrival": "constant",
    "warmup-s": 0,
    "concurrency": 4,
    "steps": [{"rate": 100, "duration-s": 0.1}],
}
# Cold start: the engine's `docker start` returns once the process runs; the probe then polls
# /health every 200 ms, and the bed shares two cores with other suites.
COLD_START_TOLERANCE_S = 2.0


def test_queues_cold_start_and_the_slowest_requests_of_a_known_server(
    run_probe: Callable[..., ProbeRun], docker_engine: DockerEngine, server_binary: Path
) -> None:
    image = build_server_image(docker_engine, server_binary, "probe-queue:candidate", KNOWN_QUEUE)
    probe = {
        "profile": TEN_AT_ONCE,
        "shortage": {"enabled": False},
        "metrics-interval-ms": 100,
        "slowest-requests": 3,
        "slo": {"server-queue-max": 2, "cold-start-max-s": 1},
    }

    run = run_probe(image, probe, "--no-compare")

    assert run.returncode == 1, run.stderr
    result = run.report["result"]
    queue = result["images"][0]["queue"]
    assert (queue["peak_in_flight"], queue["peak_waiting"]) == (4, 6)
    assert queue["server_queue_metric"] == "vllm:num_requests_waiting"
    assert queue["server_queue_peak"] == 3
    assert 2.5 <= queue["cold_start_s"] <= 2.5 + COLD_START_TOLERANCE_S
    assert queue["model_load_s"] == 2.5  # from the server's own log line
    # Served one after another: the last answered about ten service times after it was sent.
    slowest = queue["slowest"]
    assert len(slowest) == 3
    latencies = [slow["latency_ms"] for slow in slowest]
    assert latencies == sorted(latencies, reverse=True)
    assert 4500 <= latencies[0] <= 6500
    assert {(s["trial"], s["step"], s["error"]) for s in slowest} == {(1, "100/s", "")}
    assert all(0 <= s["start_s"] < 0.1 for s in slowest)
    (step,) = result["images"][0]["steps"]
    assert step["max_latency_ms"] == latencies[0]
    statuses = {c["rule"]: (c["status"], c["message"]) for c in result["checks"]}
    assert statuses["GSP107"] == (
        "fail",
        "vllm:num_requests_waiting peaked at 3 during the load steps (> 2)",
    )
    assert statuses["GSP108"][0] == "fail"
    assert statuses["GSP108"][1].endswith("(> 1 s); the model loaded in 2.5 s")
    (trial,) = result["trials"]
    server = trial["server_queue"]
    assert server["type"] == "gauge" and server["peaks"]["load"]["value"] == 3
    assert len(server["points"]) <= 600 and server["failed_reads"] == 0
    assert trial["phases"][0]["queue"]["peak_waiting"] == 6
    assert run.outputs["server-queue-peak"] == "3"
    assert (run.outputs["in-flight-peak"], run.outputs["waiting-peak"]) == ("4", "6")
    assert float(run.outputs["cold-start-s"]) == pytest.approx(queue["cold_start_s"], abs=0.005)
    assert float(run.outputs["max-latency-ms"]) == pytest.approx(latencies[0], abs=0.1)
    assert "Queue depth over time" in run.summary and "Slowest request over time" in run.summary
    assert "3 (vllm:num_requests_waiting)" in run.summary


def test_a_server_queue_that_cannot_be_read_is_unknown_not_passed(
    tmp_path: Path, server_binary: Path, nvml_host: HostEnv
) -> None:
    # A server without a Prometheus endpoint (404), started by someone else: its queue and its
    # cold start are unknown, and SLOs on them warn rather than pass.
    port = free_port()
    server = subprocess.Popen(
        [str(server_binary)],
        env={**os.environ, **GPU, "PORT": str(port), "LATENCY_MS": "5", "METRICS": "0"},
        stdout=subprocess.DEVNULL,
    )
    config = {
        "probe": {
            "profile": {"warmup-s": 0, "steps": [{"rate": 20, "duration-s": 1}]},
            "shortage": {"enabled": False},
            "metrics-url": "/metrics",
            "slo": {"server-queue-max": 10, "cold-start-max-s": 60},
            "max-lag-ms": BED_MAX_LAG_MS,
        }
    }
    (tmp_path / "gpuship.yaml").write_text(yaml.safe_dump(config))
    try:
        time.sleep(0.3)
        completed = subprocess.run(
            [sys.executable, "-m", "gpuship", "probe", "my-server", "--url",
             f"http://127.0.0.1:{port}", "--format", "json"],
            env=nvml_host(hosts.L4_550),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )  # fmt: skip
    finally:
        server.kill()
        server.wait()
    assert completed.returncode == 0, completed.stderr
    result = checked(completed.stdout)["result"]
    assert result["verdict"] == "warn"
    statuses = {c["rule"]: (c["status"], c["message"]) for c in result["checks"]}
    url = f"http://127.0.0.1:{port}/metrics"
    assert statuses["GSP403"] == ("warn", f"the server's queue is unknown: {url} answered 404")
    assert statuses["GSP107"][0] == "warn" and "answered 404" in statuses["GSP107"][1]
    assert statuses["GSP108"] == (
        "warn",
        "cold start unknown: not measured: the server was started by someone else",
    )
    queue = result["images"][0]["queue"]
    assert queue["server_queue_peak"] is None and queue["cold_start_s"] is None
    assert result["trials"][0]["server_queue"]["failed_reads"] >= 1


@pytest.mark.parametrize(
    ("setting", "field", "says"),
    [
        ("metrics-url: ftp://host/metrics", "probe.metrics-url", "give a path (/metrics)"),
        ("metrics-url: http://u:p@host:8002/m", "probe.metrics-url", "must not hold credentials"),
        ("queue-metric: 9-queue", "probe.queue-metric", "not a Prometheus metric name"),
        ("metrics-interval-ms: 0", "probe.metrics-interval-ms", "greater than or equal to 50"),
        ("slowest-requests: 100000", "probe.slowest-requests", "less than or equal to 1000"),
        ("slo: {server-queue-max: .inf}", "probe.slo.server-queue-max", "finite number"),
        ("slo: {cold-start-max-s: -1}", "probe.slo.cold-start-max-s", "greater than 0"),
        ("target: {model-load-log: 'took ('}", "probe.target.model-load-log", "not a regular"),
        ("target: {model-load-log: took}", "probe.target.model-load-log", "group named s or ms"),
    ],
)
def test_a_bad_queue_or_cold_start_setting_is_a_usage_error_naming_it(
    tmp_path: Path, setting: str, field: str, says: str
) -> None:
    (tmp_path / "gpuship.yaml").write_text(f"probe:\n  {setting}\n")
    completed = subprocess.run(
        [sys.executable, "-m", "gpuship", "probe", "any:image"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.startswith("gpuship: error: "), completed.stderr
    assert f"{field}: " in completed.stderr and says in completed.stderr, completed.stderr
    assert "Traceback" not in completed.stderr
