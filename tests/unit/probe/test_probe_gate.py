"""The gate on data: SLOs, overload behaviour, recovery, regression against stable, noise."""

from __future__ import annotations

import random

from probe_builders import CRASHED, gpu_sample, latencies, sample, trial

from gpuship.probe import rules
from gpuship.probe.analysis import image_figures
from gpuship.probe.config import ProbeConfig
from gpuship.probe.gate import GateStatus, judge, verdict
from gpuship.probe.report import probe_report
from gpuship.probe.schedule import Step
from gpuship.report.result import to_json

STEPS = [Step("50/s", 50, 10)]


def config(**probe: object) -> ProbeConfig:
    return ProbeConfig.model_validate(probe)


def steady(rng: random.Random, n: int = 500, base: float = 0.020) -> list[float]:
    return [base + rng.uniform(0, 0.004) for _ in range(n)]


def tailed(rng: random.Random, n: int = 500) -> list[float]:
    # 8 ms faster, but 5 % take 150 ms more: about the same mean as steady().
    return [0.012 + rng.uniform(0, 0.004) + (0.150 if rng.random() < 0.05 else 0) for _ in range(n)]


def results(candidate_trials, stable_trials, probe_config):  # type: ignore[no-untyped-def]
    cand = image_figures("candidate", candidate_trials, STEPS, probe_config)
    stab = image_figures("stable", stable_trials, STEPS, probe_config) if stable_trials else None
    return cand, stab


def test_a_tail_regression_fails_while_the_mean_does_not() -> None:
    rng = random.Random(1)
    probe = config(compare={"trials": 3, "metrics": ["p99", "mean"]})
    cand, stab = results(
        [trial("candidate", i, latencies(tailed(rng)), STEPS) for i in range(3)],
        [trial("stable", i, latencies(steady(rng)), STEPS) for i in range(3)],
        probe,
    )
    checks, comparisons = judge(cand, stab, probe)
    by_figure = {c.figure: c for c in comparisons}
    assert by_figure["p99"].ratio.low is not None and by_figure["p99"].ratio.low > 3
    assert by_figure["mean"].ratio.low is not None and by_figure["mean"].ratio.low < 1.1
    failed = [c for c in checks if c.status is GateStatus.FAIL]
    assert [(c.rule, c.subject) for c in failed] == [(rules.REGRESSION, "step 50/s p99")]
    assert verdict(checks) is GateStatus.FAIL


def test_the_same_image_twice_is_not_a_regression() -> None:
    rng = random.Random(2)
    probe = config(compare={"trials": 3})
    cand, stab = results(
        [trial("candidate", i, latencies(steady(rng)), STEPS) for i in range(3)],
        [trial("stable", i, latencies(steady(rng)), STEPS) for i in range(3)],
        probe,
    )
    checks, _ = judge(cand, stab, probe)
    compared = [c for c in checks if c.rule == rules.REGRESSION]
    # p99 only: TTFT exists for streamed answers.
    assert len(compared) == 1 and all(c.status is GateStatus.OK for c in compared), compared
    assert not any(c.status is GateStatus.FAIL for c in checks)


def test_a_noisy_single_trial_says_uncertain_instead_of_failing() -> None:
    # Stable's p99 from 40 requests has no upper bound: the ratio's interval is unknown.
    probe = config(compare={"trials": 1})
    cand, stab = results(
        [trial("candidate", 0, latencies([0.020] * 38 + [0.030, 0.031]), STEPS)],
        [trial("stable", 0, latencies([0.020] * 39 + [0.024]), STEPS)],
        probe,
    )
    checks, _ = judge(cand, stab, probe)
    (p99,) = [c for c in checks if c.subject == "step 50/s p99"]
    assert p99.rule == rules.REGRESSION_UNCERTAIN and p99.status is GateStatus.WARN


def test_slo_breaches_fail_with_the_figure_and_its_interval() -> None:
    probe = config(slo={"p99-ms": 50, "error-rate": 0.01, "min-throughput-rps": 60})
    load = latencies([0.020] * 450 + [0.080] * 50) + [
        sample(0.001, at=6.0, status=500, error="status") for _ in range(10)
    ]
    cand, _ = results([trial("candidate", 0, load, STEPS)], [], probe)
    checks, _ = judge(cand, None, probe)
    failed = {c.rule: c.message for c in checks if c.status is GateStatus.FAIL}
    assert failed[rules.LATENCY_SLO].startswith("p99 latency 80.0 ms > SLO 50 ms (95% CI")
    assert failed[rules.ERROR_RATE].startswith("2.0% of 510 requests failed")
    assert "status 500 x10" in failed[rules.ERROR_RATE]
    assert failed[rules.THROUGHPUT].startswith("50.0 successful requests/s (< 60)")


def test_a_late_generator_leaves_latency_unjudged_and_says_so() -> None:
    probe = config(slo={"p99-ms": 10}, max_lag_ms=5)
    cand, _ = results([trial("candidate", 0, latencies([0.5] * 500, lag=0.02), STEPS)], [], probe)
    checks, _ = judge(cand, None, probe)
    assert {c.rule for c in checks} == {rules.GENERATOR_BEHIND, rules.GPU_UNKNOWN}
    (behind,) = [c for c in checks if c.rule == rules.GENERATOR_BEHIND]
    assert behind.status is GateStatus.WARN and "20.0 ms late" in behind.message


def test_an_oom_crash_under_shortage_fails_twice_crash_and_no_recovery() -> None:
    probe = config()
    log = "ready\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n"
    crashed = trial(
        "candidate",
        0,
        latencies([0.02] * 100),
        STEPS,
        shortage=[sample(0.01), sample(0.001, status=0, error="reset")],
        recovery=[sample(0.001, status=0, error="connect")],
        after_shortage=CRASHED,
        log=log,
    )
    cand, _ = results([crashed], [], probe)
    checks, _ = judge(cand, None, probe)
    failed = {c.rule: c.message for c in checks if c.status is GateStatus.FAIL}
    assert "exited 1" in failed[rules.OOM_CRASH]
    assert "CUDA out of memory" in failed[rules.OOM_CRASH]
    assert "100% of recovery requests failed" in failed[rules.NOT_RECOVERED]


def test_clean_shedding_is_a_note_and_recovery_passes() -> None:
    probe = config()
    shed = trial(
        "candidate",
        0,
        latencies([0.02] * 100),
        STEPS,
        shortage=[sample(0.01)] * 5 + [sample(0.001, status=503, error="status")] * 20,
        recovery=[sample(0.02)] * 10,
    )
    cand, _ = results([shed], [], probe)
    checks, _ = judge(cand, None, probe)
    (note,) = [c for c in checks if c.rule == rules.OVERLOAD_BEHAVIOUR]
    assert note.status is GateStatus.NOTE and note.message == "shed: rejected 20 of 25 requests"
    assert not any(c.status is GateStatus.FAIL for c in checks)


def test_gpu_memory_headroom_is_judged_on_the_load_phase_only() -> None:
    probe = config(slo={"max-gpu-memory-fraction": 0.8})
    # Load phase: origin 100 s, 10 s long. The shortage after it fills the GPU on purpose.
    readings = [gpu_sample(100 + t, 700) for t in range(10)] + [gpu_sample(115, 990)]
    cand, _ = results(
        [trial("candidate", 0, latencies([0.02] * 100), STEPS, gpu=readings)], [], probe
    )
    assert cand.peak_memory_fraction == 0.7
    checks, _ = judge(cand, None, probe)
    (memory,) = [c for c in checks if c.rule == rules.GPU_MEMORY]
    assert memory.status is GateStatus.OK


def test_report_outputs_tables_and_charts() -> None:
    rng = random.Random(3)
    probe = config(compare={"trials": 2})
    trials = [
        trial("candidate", 0, latencies(tailed(rng)), STEPS, gpu=[gpu_sample(100, 500)]),
        trial("stable", 0, latencies(steady(rng)), STEPS, gpu=[gpu_sample(100, 400)]),
        trial("candidate", 1, latencies(tailed(rng)), STEPS),
        trial("stable", 1, latencies(steady(rng)), STEPS),
    ]
    cand = image_figures("candidate", trials[0::2], STEPS, probe)
    stab = image_figures("stable", trials[1::2], STEPS, probe)
    checks, comparisons = judge(cand, stab, probe)
    report = probe_report("probe", [cand, stab], checks, comparisons, trials)
    assert report.failed and report.outputs["verdict"] == "fail"
    assert report.outputs["reason"].startswith("step 50/s p99: candidate")
    assert [c.title for c in report.charts] == [
        "Latency vs load",
        "Queue depth over time (load steps, first trial)",
        "Slowest request over time (load steps, first trial)",
        "GPU memory over time (first trial)",
    ]
    assert [s.name for s in report.charts[0].series][:2] == ["candidate p99", "stable p99"]
    first = to_json(report.result)["trials"][0]["phases"][0]
    assert len(first["requests"]) == 500 and first["fields"][1] == "intended_ms"


def test_probe_config_rejects_what_cannot_run() -> None:
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="give health-path or ready-log"):
        config(target={"health-path": None})
    with pytest.raises(ValidationError, match="must start with '/'"):
        config(target={"health-path": "health"})
    with pytest.raises(ValidationError, match="at least 1 item"):
        config(profile={"steps": []})
    with pytest.raises(ValidationError):
        config(compare={"metrics": ["p42"]})


def test_a_host_oom_kill_under_shortage_is_a_crash_said_as_such() -> None:
    from gpuship.docker.service import ContainerState

    killed = ContainerState(running=False, exit_code=137, oom_killed=True)
    crashed = trial(
        "candidate",
        0,
        latencies([0.02] * 100),
        STEPS,
        shortage=[sample(0.001, status=0, error="reset")],
        recovery=[sample(0.001, status=0, error="connect")],
        after_shortage=killed,
    )
    cand, _ = results([crashed], [], config())
    checks, _ = judge(cand, None, config())
    (crash,) = [c for c in checks if c.rule == rules.OOM_CRASH]
    assert crash.message == "the service crashed: exited 137; killed by the host's OOM killer"
