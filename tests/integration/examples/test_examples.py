"""Every workflow in workflows-examples/ runs end to end, as a user would run it.

Each test runs one example through `act` in host mode (see conftest.py) against the test bed's
real registry (and Docker engine or NVML stand-in where the example needs them). gpuship's
actions resolve to this checkout with `--local-repository gpuship/gpuship@v1=<checkout>`;
the third-party actions that need GitHub (actions/checkout, github/codeql-action/upload-sarif,
actions/upload-artifact, actions/download-artifact, peter-evans/create-pull-request) are
mapped with `--local-repository owner/repo@<sha>=<stand-in>` to the local stand-ins in
`standins/`, which do the local equivalent and record what they received. Assertions are on
outcomes: each job's result (act silently skips jobs whose runner labels are not mapped),
step outputs, what the stand-ins recorded, and the registry's state afterwards.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from example_harness import (
    EXAMPLES,
    GPUSHIP_REF,
    THIRD_PARTY_STANDINS,
    USER_REPOSITORY,
    ExampleRun,
    RunExample,
    uses_of,
)

from bed import hosts
from bed.docker_engine import DockerEngine
from bed.fleet import Runner, publish_fleet
from bed.images import FileSpec, build_scratch_image
from bed.oci import DOCKER_MANIFEST, DOCKER_MANIFEST_LIST, OCI_INDEX, OCI_MANIFEST, make_image, push
from bed.probe_server import bed_target, build_server, live_host
from bed.registry import Registry

pytestmark = pytest.mark.integration

REPOSITORY_ROOT = Path(__file__).resolve().parents[3]

MANIFEST_TYPES = ", ".join((OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST))
EXAMPLE_WORKFLOWS = sorted(EXAMPLES.glob("*.yml"))


def push_candidate(registry: Registry, repository: str, tag: str, marker: str) -> str:
    """Push a tiny image whose content is `marker` as REPO:TAG; returns its digest."""
    image = make_image([{"app/marker.txt": marker.encode()}], labels={"test.marker": marker})
    return push(registry.url, repository, image, tag=tag)


def tag_digest(registry: Registry, repository: str, tag: str) -> str | None:
    """The digest REPO:TAG points at in the registry, or None when the tag does not exist."""
    response = requests.head(
        f"{registry.url}/v2/{repository}/manifests/{tag}",
        headers={"Accept": MANIFEST_TYPES},
        timeout=10,
    )
    if response.status_code == 404:
        return None
    response.raise_for_status()
    return response.headers["Docker-Content-Digest"]


def manifest_exists(registry: Registry, repository: str, digest: str) -> bool:
    """Whether the registry still holds a manifest by digest."""
    response = requests.head(
        f"{registry.url}/v2/{repository}/manifests/{digest}",
        headers={"Accept": MANIFEST_TYPES},
        timeout=10,
    )
    return response.status_code == 200


def gpuship_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the gpuship CLI of this checkout in `cwd` (to set up registry state beforehand)."""
    return subprocess.run(
        [sys.executable, "-m", "gpuship", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.mark.parametrize("workflow", EXAMPLE_WORKFLOWS, ids=[p.name for p in EXAMPLE_WORKFLOWS])
def test_example_uses_only_gpuship_and_mapped_standins(workflow: Path) -> None:
    """Every `uses:` is gpuship@v1 or a SHA-pinned action the tests map to a stand-in."""
    for uses in uses_of(workflow):
        repo, _, ref = uses.partition("@")
        owner_repo = "/".join(repo.split("/")[:2])
        if owner_repo == GPUSHIP_REF.split("@")[0]:
            assert ref == "v1", uses
        else:
            assert f"{owner_repo}@{ref}" in THIRD_PARTY_STANDINS, f"{uses} has no stand-in"


def release_config(live_dir: Path) -> str:
    """The sample project's gpuship.yaml with the probe pointed at the bed: host network (the
    bed engine has no bridge), no GPU request (no NVIDIA runtime; readings come from the NVML
    stand-in, fed by the server), a short profile."""
    config = yaml.safe_load((EXAMPLES / "sample-project" / "gpuship.yaml").read_text())
    config["verify"] = {"require-gpu-runtime": False}
    config["probe"].update(
        {
            "target": bed_target(live_dir),
            "profile": {"warmup-s": 0, "steps": [{"rate": 20, "duration-s": 2}]},
            "shortage": {"rate": 40, "duration-s": 1, "cooldown-s": 0.2, "recovery-duration-s": 1},
            "compare": {"trials": 1},
            # The bed shares two cores with other suites: a late generator is reported, and
            # only badly late steps go unjudged.
            "max-lag-ms": 50,
        }
    )
    return yaml.safe_dump(config)


def push_server(
    engine: DockerEngine, binary: Path, registry: Registry, repository: str, tag: str
) -> str:
    """The stand-in model server as a CUDA 12.8 image, pushed by the engine; its digest."""
    reference = f"{registry.host}/{repository}:{tag}"
    behaviour = {
        **CUDA_12_8_ENV,
        "BUILD": tag,  # each build its own digest
        "LATENCY_MS": "10",
        "MEM_TOTAL_MIB": "81559",
        "MEM_BASE_MIB": "60000",
        "MEM_PER_REQUEST_MIB": "2048",
    }
    build_scratch_image(
        engine,
        reference,
        [{"server": FileSpec(binary.read_bytes(), mode=0o755)}],
        env=behaviour,
        labels=CUDA_12_8_LABELS,
        extra_lines=['ENTRYPOINT ["/server"]'],
    )
    engine.client.images.push(f"{registry.host}/{repository}", tag=tag)
    digest = tag_digest(registry, repository, tag)
    assert digest is not None
    return digest


def test_release_verifies_probes_then_promotes_by_digest_and_never_overwrites_a_version(
    run_example: RunExample,
    registry: Registry,
    docker_engine: DockerEngine,
    nvml_host: Callable[[Mapping[str, Any]], dict[str, str]],
    tmp_path: Path,
) -> None:
    repository = "examples/release/app"
    binary = build_server(REPOSITORY_ROOT / "tests" / ".build")
    candidate = push_server(docker_engine, binary, registry, repository, "sha-1111111-sample")
    live_dir = tmp_path / "nvml"
    live_dir.mkdir()
    inputs = {
        "image": f"{registry.host}/{repository}",
        "digest": candidate,
        "version": "1.0.0",
        "environment": "prod",
    }
    options: dict[str, Any] = {
        "event": "workflow_dispatch",
        "registry_host": registry.host,
        "labels": ("ubuntu-latest", "gpu"),
        "files": {"gpuship.yaml": release_config(live_dir)},
        "env": {
            **nvml_host(live_host(hosts.H100_570, live_dir / "live.json")),
            **docker_engine.env,
        },
    }

    run = run_example("release.yml", payload={"inputs": inputs}, **options)

    assert run.returncode == 0, run.explain()
    assert run.job_results("verify") == ["success"], run.explain()
    assert run.job_results("probe") == ["success"], run.explain()
    assert run.job_results("promote") == ["success"], run.explain()
    (probed,) = run.step_outputs("probe", "probe")
    # The first release has no prod image to compare with: said, not failed.
    assert probed["verdict"] == "warn" and "not compared" in probed["reason"]
    # The stand-in sheds past its memory: never a crash, whether the short burst filled it.
    assert probed["overload"] in ("absorbed", "shed")
    uploads = {record["name"]: record for record in run.records("upload-artifact")}
    probe_upload = uploads[next(name for name in uploads if name.startswith("probe-"))]
    report = json.loads(
        (run.artifacts_dir / probe_upload["name"] / "gpuship-probe.json").read_text()
    )
    assert report["result"]["trials"][0]["phases"][0]["requests"]
    (outputs,) = run.step_outputs("promote", "promote")
    assert outputs["digest"] == candidate
    assert set(outputs["changed-tags"].split(",")) == {"1.0.0", "prod", "latest"}
    for tag in ("1.0.0", "prod", "latest"):
        assert tag_digest(registry, repository, tag) == candidate
    assert [r["persist-credentials"] for r in run.records("checkout")] == ["false"] * 3
    promote_upload = uploads[next(name for name in uploads if name.startswith("release-"))]
    assert sorted(promote_upload["files"]) == ["gpuship-release.json", "gpuship-rollback.md"]
    stored = run.artifacts_dir / promote_upload["name"]
    record = json.loads((stored / "gpuship-release.json").read_text(encoding="utf-8"))
    assert candidate in json.dumps(record)
    notes = (stored / "gpuship-rollback.md").read_text(encoding="utf-8")
    assert outputs["release-id"] in notes
    assert "`prod`" in notes and "`1.0.0`" in notes

    # Another digest under the same version: probed against prod (the first release), then
    # refused by promote; the published tag keeps its digest.
    other = push_server(docker_engine, binary, registry, repository, "sha-2222222-sample")
    again = run_example("release.yml", payload={"inputs": {**inputs, "digest": other}}, **options)
    assert again.returncode != 0
    assert again.job_results("probe") == ["success"], again.explain()
    (compared,) = again.step_outputs("probe", "probe")
    assert compared["worst-ratio"], compared
    assert again.job_results("promote") == ["failure"], again.explain()
    assert tag_digest(registry, repository, "1.0.0") == candidate


def test_rollback_points_the_floating_tag_back_and_records_it(
    run_example: RunExample, registry: Registry, tmp_path: Path
) -> None:
    repository = "examples/rollback/app"
    first = push_candidate(registry, repository, "sha-3333333-sample", "first")
    second = push_candidate(registry, repository, "sha-4444444-sample", "second")
    for digest in (first, second):
        gpuship_cli(tmp_path, "promote", f"{registry.host}/{repository}@{digest}", "--move", "prod")
    assert tag_digest(registry, repository, "prod") == second

    run = run_example(
        "rollback.yml",
        event="workflow_dispatch",
        payload={
            "inputs": {
                "repository": f"{registry.host}/{repository}",
                "tag": "prod",
                "target": "",
                "environment": "prod",
            }
        },
        registry_host=registry.host,
    )

    assert run.returncode == 0, run.explain()
    assert run.job_results("rollback") == ["success"], run.explain()
    (outputs,) = run.step_outputs("rollback", "rollback")
    assert outputs["digest"] == first
    assert tag_digest(registry, repository, "prod") == first
    (upload,) = run.records("upload-artifact")
    assert upload["files"] == ["gpuship-release.json"]
    record = (run.artifacts_dir / upload["name"] / "gpuship-release.json").read_text()
    assert first in record and second in record


RETENTION_POLICY = """
release:
  retention:
    keep:
      - pattern: "sha-.*"
        younger-than-days: 30
    protect: ["prod"]
"""


def test_retention_dry_runs_on_pull_requests_and_deletes_on_main(
    run_example: RunExample, registry: Registry, tmp_path: Path
) -> None:
    repository = "examples/retention/app"
    protected = push_candidate(registry, repository, "sha-5555555-sample", "released")
    old = [
        push_candidate(registry, repository, f"sha-{n}{n}{n}{n}{n}{n}{n}-sample", f"old {n}")
        for n in (6, 7)
    ]
    push(registry.url, repository, make_image([{"prod.txt": b"prod"}]), tag="unrelated")
    gpuship_cli(tmp_path, "promote", f"{registry.host}/{repository}@{protected}", "--move", "prod")
    config = (EXAMPLES / "sample-project" / "gpuship.yaml").read_text() + RETENTION_POLICY
    common = {
        "registry_host": registry.host,
        "files": {"gpuship.yaml": config},
        "variables": {"PRUNE_REPOSITORIES": json.dumps([f"{registry.host}/{repository}"])},
    }

    dry = run_example("retention.yml", event="pull_request", payload={}, **common)

    assert dry.returncode == 0, dry.explain()
    assert dry.job_results("dry-run") == ["success"], dry.explain()
    assert dry.job_results("apply") == []
    (outputs,) = dry.step_outputs("dry-run", "prune")
    assert set(outputs["selected"].split(",")) == set(old)
    assert outputs["deleted"] == ""
    assert all(manifest_exists(registry, repository, digest) for digest in old)

    applied = run_example("retention.yml", event="schedule", payload={}, **common)

    assert applied.returncode == 0, applied.explain()
    assert applied.job_results("apply") == ["success"], applied.explain()
    assert applied.job_results("dry-run") == []
    (outputs,) = applied.step_outputs("apply", "prune")
    assert set(outputs["deleted"].split(",")) == set(old)
    assert not any(manifest_exists(registry, repository, digest) for digest in old)
    assert tag_digest(registry, repository, "prod") == protected
    assert tag_digest(registry, repository, "sha-5555555-sample") == protected
    assert tag_digest(registry, repository, "unrelated") is not None


def push_cuda_base(registry: Registry, repository: str, tag: str, cuda: str) -> str:
    """A tiny stand-in for an nvidia/cuda runtime base (the sample Dockerfile only COPYs)."""
    image = make_image(
        [
            {
                "etc/os-release": b'ID=ubuntu\nVERSION_ID="22.04"\n',
                f"usr/local/cuda-{cuda}/version.json": json.dumps(
                    {"cuda": {"name": "CUDA SDK", "version": f"{cuda}.1"}}
                ).encode(),
            }
        ],
        env={"CUDA_VERSION": f"{cuda}.1", "NVIDIA_REQUIRE_CUDA": f"cuda>={cuda}"},
    )
    return push(registry.url, repository, image, tag=tag)


def lock_project(environment: dict[str, str]) -> Callable[[Path], None]:
    """`gpuship lock` in the user repository before its commit, as a user commits the lock."""

    def prepare(repo: Path) -> None:
        subprocess.run(
            [sys.executable, "-m", "gpuship", "lock"],
            cwd=repo,
            env=environment,
            check=True,
            capture_output=True,
        )

    return prepare


# The fleet the GPU runners published: an old-driver pool, a split pool (one A100 still on
# 535), an arm64 pool and a MIG pool beside the H100 pool. Only gpu-h100 runs on this machine.
FLEET = (
    Runner("h100-1", ("gpu-h100",), hosts.H100_570),
    Runner("t4-1", ("gpu-t4",), hosts.T4_470),
    Runner("a100-1", ("gpu-a100",), hosts.A100_550),
    Runner("a100-2", ("gpu-a100",), hosts.A100_535),
    Runner("gh200-1", ("gpu-gh200",), hosts.H100_570, machine="aarch64"),
    Runner("mig-1", ("gpu-a100-mig",), hosts.A100_MIG_550),
)
ROUTE_CONFIG = """
verify:
  require-gpu-runtime: false    # the bed's engine has no NVIDIA container runtime
  minor-version-compat: error   # a pool must run the candidate's CUDA natively
route:
  pools: [gpu-h100, gpu-a100, gpu-a100-mig, gpu-gh200, gpu-t4]
"""


def test_build_matrix_builds_pushes_maps_and_routes_every_cell(
    run_example: RunExample,
    registry: Registry,
    docker_engine: DockerEngine,
    nvml_host: Callable[[Mapping[str, Any]], dict[str, str]],
    tmp_path: Path,
) -> None:
    base = "examples/build-matrix/cuda-base"
    for cuda in ("12.4", "12.6"):
        push_cuda_base(registry, base, f"{cuda}-runtime", cuda)
    sample = (EXAMPLES / "sample-project" / "gpuship.yaml").read_text()
    # One Python keeps the run short: two cells, one per CUDA branch.
    config = sample.replace('python: ["3.11", "3.12"]', 'python: ["3.12"]')
    config = config.replace("sample/cuda-base", base)
    assert config.count(base) == 1 and 'python: ["3.12"]' in config
    environment = docker_engine.cli_env()
    publish_fleet(registry.host, "examples/fleet", FLEET, nvml_host, tmp_path)

    run = run_example(
        "build-matrix.yml",
        event="push",
        registry_host=registry.host,
        files={"gpuship.yaml": config + ROUTE_CONFIG},
        prepare=lock_project(environment),
        # The GPU jobs' runs-on lists start with self-hosted, mapped nowhere: only a job
        # routed to gpu-h100 can start here.
        labels=("ubuntu-latest", "gpu-h100"),
        variables={"GPU_FLEET": f"{registry.host}/examples/fleet"},
        env={**docker_engine.env, **nvml_host(hosts.H100_570)},
    )

    assert run.returncode == 0, run.explain()
    assert run.job_results("matrix") == ["success"], run.explain()
    assert run.job_results("build") == ["success", "success"], run.explain()
    assert run.job_results("image-map") == ["success"], run.explain()
    (matrix,) = run.step_outputs("matrix", "matrix")
    cells = json.loads(matrix["matrix"])["include"]
    assert sorted(cell["cuda"] for cell in cells) == ["12.4", "12.6"]
    commit = subprocess.run(
        ["git", "-C", str(run.repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    built = {out["image"] for out in run.step_outputs("build", "build")}
    image_map = (run.artifacts_dir / "image-map" / "image-map.md").read_text(encoding="utf-8")
    for cell in cells:
        repository = str(cell["repository"]).split("/", 1)[1]
        digest = tag_digest(registry, repository, f"sha-{commit[:7]}-{cell['id']}")
        assert digest is not None, f"candidate of {cell['id']} not pushed"
        assert f"{cell['repository']}@{digest}" in built
        assert f"| {cell['id']} |" in image_map and digest in image_map
    uploads = {record["name"] for record in run.records("upload-artifact")}
    assert uploads == {"image-map", *(f"image-{cell['id']}" for cell in cells)}

    # route on ubuntu-latest: both candidates to gpu-h100, the split A100 pool named.
    assert run.job_results("route") == ["success"], run.explain()
    (routed,) = run.step_outputs("route", "route")
    entries = json.loads(routed["matrix"])["include"]
    assert sorted(e["image"] for e in entries) == sorted(built)
    assert {e["pool"] for e in entries} == {"gpu-h100"}
    assert all(e["runs-on"] == ["self-hosted", "gpu-h100"] for e in entries)
    pools = json.loads(routed["pools"])
    cu124 = next(name for name in pools if "cuda12.4" in name)
    assert pools[cu124] == ["gpu-h100", "gpu-a100-mig"]
    # One warning for the split pool, naming the host that cannot run the candidates.
    split = re.findall(r"pool gpu-a100 is split for \d+ image\(s\)[^\n]*", run.log)
    assert split and all("(a100-2), e.g. a100-2 cannot run" in line for line in split), split
    # One GPU job per routed candidate, each guarded by verify on its host.
    assert run.job_results("gpu-test") == ["success", "success"], run.explain()
    verdicts = run.step_outputs("gpu-test", "verify")
    assert sorted(v["verdict"] for v in verdicts) == ["ok", "ok"]


# What a CUDA 12.8 runtime image built by gpuship carries (nvidia/cuda 12.8.1 environment,
# with the compat-branch terms of its NVIDIA_REQUIRE_CUDA) and the labels gpuship build adds.
CUDA_12_8_ENV = {
    "CUDA_VERSION": "12.8.1",
    "NVIDIA_REQUIRE_CUDA": "cuda>=12.8 brand=unknown,driver>=470,driver<471 "
    "brand=tesla,driver>=535,driver<536 brand=tesla,driver>=550,driver<551",
}
CUDA_12_8_LABELS = {"io.gpuship.cuda": "12.8", "io.gpuship.arch-list": "8.0;9.0"}
VERIFY_CONFIG = """
verify:
  # The bed's engine has no NVIDIA container runtime; that check has its own tests.
  require-gpu-runtime: false
"""


@pytest.mark.parametrize(
    ("host", "runs"),
    [(hosts.H100_570, True), (hosts.A100_525, False)],
    ids=["H100-driver-570-trains", "A100-driver-525-never-trains"],
)
def test_gpu_verify_gates_training_and_reports_the_fleet(
    run_example: RunExample,
    registry: Registry,
    docker_engine: DockerEngine,
    nvml_host: Callable[[Mapping[str, Any]], dict[str, str]],
    host: Mapping[str, Any],
    runs: bool,
) -> None:
    image = make_image(
        [{"app/train.py": b"print('train')\n"}], env=CUDA_12_8_ENV, labels=CUDA_12_8_LABELS
    )
    digest = push(registry.url, "examples/gpu-verify/train", image, tag="sha-8888888-train")
    reference = f"{registry.host}/examples/gpu-verify/train@{digest}"
    label = "gpu-fleet-a"
    config = (EXAMPLES / "sample-project" / "gpuship.yaml").read_text() + VERIFY_CONFIG

    run = run_example(
        "gpu-verify.yml",
        event="workflow_dispatch",
        payload={"inputs": {"image": reference, "runner-label": label}},
        # Only the configured labels run on this host: a job that ignored them would be skipped.
        labels=("ubuntu-latest", label),
        variables={"GPU_RUNNER_LABELS": json.dumps([label])},
        registry_host=registry.host,
        files={"gpuship.yaml": config},
        env={**nvml_host(host), **docker_engine.env},
    )

    assert run.job_results("audit") == ["success"], run.explain()
    assert run.job_results("verify") == ["success" if runs else "failure"], run.explain()
    assert run.job_results("train") == (["success"] if runs else []), run.explain()
    assert (run.returncode == 0) is runs
    (verdict,) = run.step_outputs("verify", "verify")
    assert verdict["verdict"] == ("ok" if runs else "fail")
    audit = json.loads((run.artifacts_dir / f"audit-{label}" / f"audit-{label}.json").read_text())
    assert audit["runner"]["labels"] == [label]
    assert audit["nvml"]["driver_version"] == host["driver_version"]
    # The report job never gates: it says where the image runs, or why not.
    assert run.job_results("fleet") == ["success"], run.explain()
    report = (run.artifacts_dir / "fleet-report" / "fleet-report.md").read_text()
    assert label in report
    assert ("FAIL" in report) is not runs, report


PLAN_LABEL = "gpu-a100-535"


def run_fleet_plan(
    run_example: RunExample,
    registry: Registry,
    docker_engine: DockerEngine,
    nvml_host: Callable[[Mapping[str, Any]], dict[str, str]],
    inputs: Mapping[str, str],
) -> ExampleRun:
    """fleet-plan.yml over one audited pool (an A100 on driver 535) and the sample matrix."""
    base = "examples/fleet-plan/cuda-base"
    for cuda in ("12.4", "12.6"):
        push_cuda_base(registry, base, f"{cuda}-runtime", cuda)
    sample = (EXAMPLES / "sample-project" / "gpuship.yaml").read_text()
    config = sample.replace("sample/cuda-base", base)
    assert config.count(base) == 1
    return run_example(
        "fleet-plan.yml",
        event="workflow_dispatch",
        payload={"inputs": inputs},
        labels=("ubuntu-latest", PLAN_LABEL),
        variables={"GPU_RUNNER_LABELS": json.dumps([PLAN_LABEL])},
        registry_host=registry.host,
        files={"gpuship.yaml": config + VERIFY_CONFIG},
        prepare=lock_project(docker_engine.cli_env()),
        env={**nvml_host(hosts.A100_535), **docker_engine.env},
    )


def test_fleet_plan_reports_the_rollout_of_a_driver_change(
    run_example: RunExample,
    registry: Registry,
    docker_engine: DockerEngine,
    nvml_host: Callable[[Mapping[str, Any]], dict[str, str]],
) -> None:
    run = run_fleet_plan(
        run_example, registry, docker_engine, nvml_host, {"driver": f"{PLAN_LABEL}=570.195.03"}
    )

    assert run.returncode == 0, run.explain()
    assert run.job_results("audit") == ["success"], run.explain()
    assert run.job_results("plan") == ["success"], run.explain()
    plan = (run.artifacts_dir / "fleet-plan" / "fleet-plan.md").read_text(encoding="utf-8")
    # The pool's label names driver branch 535: the pilot step says to rename it.
    assert (
        f"upgrade the pilot host of pool {PLAN_LABEL} to driver 570.195.03, "
        f"and rename its label {PLAN_LABEL} to gpu-a100-570"
    ) in plan, plan
    # Every cell of the sample matrix is judged on the pool, and none loses it.
    for cuda, python in [(c, p) for c in ("12.4", "12.6") for p in ("3.11", "3.12")]:
        assert f"sample-cuda{cuda}-python{python}" in plan, plan
    assert "| images that lose every host | none |" in plan, plan


def test_fleet_plan_fails_on_a_malformed_change_naming_it(
    run_example: RunExample,
    registry: Registry,
    docker_engine: DockerEngine,
    nvml_host: Callable[[Mapping[str, Any]], dict[str, str]],
) -> None:
    # A leading `-` stays a value of --driver, never a flag of its own.
    run = run_fleet_plan(
        run_example, registry, docker_engine, nvml_host, {"driver": "nopool, --output=x"}
    )

    assert run.returncode != 0
    assert run.job_results("plan") == ["failure"], run.explain()
    (outputs,) = run.step_outputs("plan", "plan")
    assert outputs["exit-code"] == "2", run.explain()
    errors = [a["message"] for a in run.annotations("plan", "error")]
    assert errors == ["--driver 'nopool': expected POOL=VERSION (gpu-a100=580.65.06)"], errors
    # Nothing was planned, so nothing is uploaded as a plan.
    assert "fleet-plan" not in {record["name"] for record in run.records("upload-artifact")}


def pull_request_event(head_repository: str) -> dict[str, Any]:
    """A pull_request payload whose head branch lives in `head_repository`."""
    return {
        "number": 7,
        "pull_request": {
            "number": 7,
            "head": {"ref": "feature", "repo": {"full_name": head_repository}},
            "base": {"ref": "main", "repo": {"full_name": USER_REPOSITORY}},
        },
    }


def test_pr_lint_passes_the_sample_project_and_uploads_its_sarif(
    run_example: RunExample,
) -> None:
    run = run_example(
        "pr-lint.yml", event="pull_request", payload=pull_request_event(USER_REPOSITORY)
    )

    assert run.returncode == 0, run.explain()
    assert run.job_results("lint") == ["success"], run.explain()
    (outputs,) = run.step_outputs("lint", "lint")
    assert outputs["error-count"] == "0"
    assert outputs["sarif-file"] == "gpuship-lint.sarif"
    (sarif,) = run.records("upload-sarif")
    assert sarif["file"] == "gpuship-lint.sarif"
    assert sarif["category"] == "gpuship-lint"
    assert sarif["tools"] == ["gpuship"]
    assert [r for r in sarif["results"] if r["level"] == "error"] == []


# Two error-level findings (an unquoted `>=` is a shell redirect; a token baked into the
# image) and warnings (unpinned base and package, weights in the image).
BAD_DOCKERFILE = """\
FROM python:latest
ENV HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789
RUN pip install torch>=2.1
COPY model.safetensors /models/model.safetensors
"""


def test_pr_lint_fails_on_findings_and_still_uploads_them(run_example: RunExample) -> None:
    run = run_example(
        "pr-lint.yml",
        event="pull_request",
        payload=pull_request_event(USER_REPOSITORY),
        files={"trainer/Dockerfile": BAD_DOCKERFILE, "trainer/model.safetensors": "weights"},
    )

    assert run.returncode != 0
    assert run.job_results("lint") == ["failure"], run.explain()
    (outputs,) = run.step_outputs("lint", "lint")
    assert (outputs["exit-code"], outputs["error-count"]) == ("1", "2")
    (sarif,) = run.records("upload-sarif")
    failing = {r["ruleId"] for r in sarif["results"] if r["level"] == "error"}
    assert failing == {"GSL109", "GSL901"}
    assert failing <= set(sarif["rules"])


def test_pr_lint_from_a_fork_annotates_without_uploading(run_example: RunExample) -> None:
    run = run_example(
        "pr-lint.yml",
        event="pull_request",
        payload=pull_request_event("someone/fork"),
        files={"trainer/Dockerfile": BAD_DOCKERFILE},
    )

    assert run.job_results("lint") == ["failure"], run.explain()
    assert run.records("upload-sarif") == []
    errors = {(a["file"], a["line"], a["title"]) for a in run.annotations("lint", "error")}
    assert errors == {
        ("trainer/Dockerfile", "2", "gpuship GSL901"),
        ("trainer/Dockerfile", "3", "gpuship GSL109"),
    }


def test_lock_refresh_opens_a_pull_request_only_when_a_base_moved(
    run_example: RunExample, registry: Registry
) -> None:
    base = "examples/lock-refresh/cuda-base"
    for cuda in ("12.4", "12.6"):
        push_cuda_base(registry, base, f"{cuda}-runtime", cuda)
    sample = (EXAMPLES / "sample-project" / "gpuship.yaml").read_text()
    config = sample.replace("sample/cuda-base", base)
    assert config != sample
    unchanged = run_example(
        "lock-refresh.yml",
        event="schedule",
        registry_host=registry.host,
        files={"gpuship.yaml": config},
        prepare=lock_project(dict(os.environ)),
    )

    assert unchanged.returncode == 0, unchanged.explain()
    assert unchanged.job_results("refresh") == ["success"], unchanged.explain()
    (record,) = unchanged.records("create-pull-request")
    assert record["operation"] == "none"

    moved = push(
        registry.url,
        base,
        make_image([{"etc/os-release": b'ID=ubuntu\nVERSION_ID="22.04"\n# security update\n'}]),
        tag="12.6-runtime",
    )
    # The same commit as before: the lock still names the old digest of 12.6-runtime.
    committed_lock = (unchanged.repo / "gpuship.lock").read_text(encoding="utf-8")
    refreshed = run_example(
        "lock-refresh.yml",
        event="schedule",
        registry_host=registry.host,
        files={"gpuship.yaml": config, "gpuship.lock": committed_lock},
    )

    assert refreshed.returncode == 0, refreshed.explain()
    (record,) = refreshed.records("create-pull-request")
    assert record["operation"] == "created"
    assert record["branch"] == "gpuship/lock-refresh"
    assert list(record["changed"]) == ["gpuship.lock"]
    assert moved in record["changed"]["gpuship.lock"]
    assert moved not in committed_lock
    (outputs,) = refreshed.step_outputs("refresh", "pull-request")
    assert outputs["pull-request-operation"] == "created"
