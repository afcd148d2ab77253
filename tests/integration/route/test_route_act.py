"""The route action's `remove-labels`, `runner-token` and `runner-scope` inputs, through act.

GitHub's REST API cannot run here, so `RunnersApi` below is a STAND-IN for it
(`bed.github_api`): a small HTTP server on 127.0.0.1 answering the two calls
`route --remove-labels apply` makes, as docs.github.com documents them ("List self-hosted
runners for a repository", "Remove a custom label from a self-hosted runner for a
repository"), and recording every request. act points the job's GITHUB_API_URL at it
(`--env GITHUB_API_URL`, which act lets the user override). Everything else is real: act runs
the action, the fleet is `gpuship audit` readings of NVML stand-in hosts published to the
bed's registry, read through a recording proxy that reports every Authorization header it
sees (the runner token must never reach the registry).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from bed import hosts
from bed.act import ActRunner
from bed.fleet import Runner, publish_fleet
from bed.github_api import ApiHandler, StandInApi
from bed.ledger import CredentialLedger
from bed.oci import make_image, push
from bed.recorder import RecordingProxy, run_proxy
from bed.registry import Registry

pytestmark = pytest.mark.integration

HostEnv = Callable[[Mapping[str, Any]], dict[str, str]]
TOKEN = "gpuship-bed-runner-token-7c41d9"
SCOPE = "acme/gpu-fleet"  # not the workflow's repository: runner-scope must reach gpuship
# Two runners whose audits contradict a label (driver branch; GPU model), one that is honest.
FLEET = (
    Runner("a100-7", ("gpu-a100-570",), hosts.A100_550),
    Runner("t4-2", ("gpu-t4-470", "gpu-l4-470"), hosts.T4_470),
    Runner("h100-1", ("gpu-h100-570",), hosts.H100_570),
)
RUNNER_IDS = {"a100-7": 7, "t4-2": 12, "h100-1": 3}
CONTRADICTED = {("a100-7", "gpu-a100-570"), ("t4-2", "gpu-l4-470")}
CONFIG = """
verify:
  require-gpu-runtime: false    # the bed has no NVIDIA container runtime
"""


class RunnersApi(StandInApi):
    """The self-hosted runners of SCOPE and their labels."""

    def __init__(self) -> None:
        super().__init__(_Handler)
        self.labels = {RUNNER_IDS[r.name]: list(r.labels) for r in FLEET}


class _Handler(ApiHandler):
    server: RunnersApi

    def do_GET(self) -> None:
        self.record()
        path, _, query = self.path.partition("?")
        if path == f"/repos/{SCOPE}/actions/runners":
            name = urllib.parse.parse_qs(query).get("name", [""])[0]
            found = [{"id": RUNNER_IDS[name], "name": name}] if name in RUNNER_IDS else []
            self.reply(200, {"total_count": len(found), "runners": found})
        elif path.startswith("/bed-section/"):
            self.reply(200, {})
        else:
            self.reply(404, {"message": "Not Found"})

    def do_DELETE(self) -> None:
        self.record()
        prefix = f"/repos/{SCOPE}/actions/runners/"
        runner, _, label = self.path.removeprefix(prefix).partition("/labels/")
        labels = self.server.labels.get(int(runner), []) if runner.isdigit() else []
        if self.path.startswith(prefix) and label in labels:
            labels.remove(label)
            names = [{"id": 1, "name": name, "type": "custom"} for name in labels]
            self.reply(200, {"total_count": len(names), "labels": names})
        else:
            self.reply(404, {"message": "Not Found"})


@pytest.fixture
def github_api() -> Iterator[RunnersApi]:
    api = RunnersApi()
    with api.serving():
        yield api


# One run: dry-run, then apply, then a bad value. Each section starts with a request to the
# stand-in (so its record splits by section) and a line in the log.
WORKFLOW = """\
name: route and take lying runners out
on: push
jobs:
  route:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - id: dry
        continue-on-error: true
        uses: gpuship/gpuship/actions/route@v1
        with:
          images: {image}
          fleet: {fleet}
          config: gpuship.yaml
          remove-labels: dry-run
          runner-token: {token}
          runner-scope: {scope}
      - env:
          SECTION: apply
        run: python3 section.py
      - id: apply
        continue-on-error: true
        uses: gpuship/gpuship/actions/route@v1
        with:
          images: {image}
          fleet: {fleet}
          config: gpuship.yaml
          remove-labels: apply
          runner-token: {token}
          runner-scope: {scope}
      - env:
          SECTION: bad
        run: python3 section.py
      - id: bad
        continue-on-error: true
        uses: gpuship/gpuship/actions/route@v1
        with:
          images: {image}
          fleet: {fleet}
          config: gpuship.yaml
          remove-labels: sometimes
      - env:
          # The token again, in plain text: masked in the log only if the action masked it.
          LEAK: {token}
        run: >-
          echo "RESULT dry=${{{{ steps.dry.outputs.exit-code }}}}
          apply=${{{{ steps.apply.outputs.exit-code }}}}
          bad=${{{{ steps.bad.outputs.exit-code }}}} token=$LEAK"
"""
# A step marking where the next section starts: in the log, and at the stand-in.
SECTION = """\
import os, urllib.request
print("BED-SECTION-" + os.environ["SECTION"])
urllib.request.urlopen(os.environ["GITHUB_API_URL"] + "/bed-section/" + os.environ["SECTION"])
"""


def sections(log: str) -> dict[str, str]:
    """The log split at the section lines (`BED-SECTION-apply` only as the step prints it)."""
    first, _, rest = log.partition("| BED-SECTION-apply")
    applied, _, bad = rest.partition("| BED-SECTION-bad")
    assert applied and bad, log[-4000:]
    return {"dry": first, "apply": applied, "bad": bad}


def requests_by_section(api: StandInApi) -> dict[str, list[tuple[str, str, str]]]:
    """The stand-in's record (method, path, Authorization) split at the section requests."""
    split: dict[str, list[tuple[str, str, str]]] = {"dry": [], "apply": [], "bad": []}
    current = "dry"
    for method, path, headers in api.requests:
        if path.startswith("/bed-section/"):
            current = path.removeprefix("/bed-section/")
        else:
            split[current].append((method, path, headers.get("authorization", "")))
    return split


@pytest.fixture(scope="module")
def fleet_registry(
    registry: Registry, nvml_host: HostEnv, tmp_path_factory: pytest.TempPathFactory
) -> Registry:
    publish_fleet(registry.host, "route/act/fleet", FLEET, nvml_host, tmp_path_factory.mktemp("a"))
    return registry


def test_remove_labels_dry_run_apply_and_a_bad_value(
    act: ActRunner, fleet_registry: Registry, github_api: RunnersApi
) -> None:
    image = make_image([{"app/run.py": b"print('gpu')\n"}], labels={"io.gpuship.cuda": "12.4"})
    digest = push(fleet_registry.url, "route/act/app", image, tag="candidate")
    ledger = CredentialLedger()
    with run_proxy(RecordingProxy(fleet_registry.host, ledger)) as proxy:
        workflow = WORKFLOW.format(
            image=f"{proxy.host}/route/act/app@{digest}",
            fleet=f"{proxy.host}/route/act/fleet",
            token=TOKEN,
            scope=SCOPE,
        )
        result = act(
            workflow,
            files={"gpuship.yaml": CONFIG, "section.py": SECTION},
            extra_args=["--env", f"GITHUB_API_URL={github_api.url}"],
        )
        assert proxy.requests, "the fleet was not read through the recording proxy"
    assert result.succeeded, result.log[-6000:]
    log = sections(result.log)
    calls = requests_by_section(github_api)

    # dry-run: no call at all (though it was given the token); the log says each removal and
    # the REST calls that make it (owner, repo and runner id left for the reader: no call was
    # made to look the id up).
    assert calls["dry"] == []
    for runner, label in CONTRADICTED:
        assert f"dry run: would take label {label} off runner {runner}" in log["dry"]
        calls_said = (
            f"DELETE /repos/{{owner}}/{{repo}}/actions/runners/{{runner_id}}/labels/{label}",
            f"GET /repos/{{owner}}/{{repo}}/actions/runners?name={runner}",
        )
        assert all(call in log["dry"] for call in calls_said), calls_said
    assert "would take label gpu-h100-570" not in log["dry"]

    # apply: exactly one DELETE per contradicted label, under runner-scope, with the token.
    deletes = sorted(path for method, path, _ in calls["apply"] if method == "DELETE")
    assert deletes == sorted(
        f"/repos/{SCOPE}/actions/runners/{RUNNER_IDS[runner]}/labels/{label}"
        for runner, label in CONTRADICTED
    )
    assert {method for method, _, _ in calls["apply"]} == {"GET", "DELETE"}
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in calls["apply"]), calls["apply"]
    assert github_api.labels == {7: [], 12: ["gpu-t4-470"], 3: ["gpu-h100-570"]}
    for runner, label in CONTRADICTED:
        assert f"runner {runner}: label {label} removed" in log["apply"]

    # A bad value: gpuship's one line, exit 2, no call.
    assert calls["bad"] == []
    said = {
        line.split("gpuship route: ", 1)[1]
        for line in log["bad"].splitlines()
        if "gpuship route: " in line
    }
    assert said == {
        "argument --remove-labels: invalid choice: 'sometimes' (choose from 'dry-run', "
        "'apply') (see 'gpuship route --help')"
    }, log["bad"]
    assert "Traceback" not in result.log

    # The registry never saw an Authorization header (the token went to the API only), and
    # the token appears nowhere in the job's log: the action masked it for the whole job.
    assert ledger.events == []
    assert TOKEN not in result.log
    # dry-run and apply exit 1: the contradicted labels are error findings (GSV404).
    assert "RESULT dry=1 apply=1 bad=2 token=***" in result.log, result.log[-3000:]
