"""Taking a label off a self-hosted runner through GitHub's REST API. GitHub's API cannot run
here, so the calls go to a stand-in server (`bed.github_api`) that answers as docs.github.com
documents them ("List self-hosted runners for a repository", "Remove a custom label from a
self-hosted runner for a repository"); the test checks what gpuship sends and what it does with
each answer."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from bed.github_api import ApiHandler, StandInApi
from gpuship.errors import EnvironmentUnavailable, InputError
from gpuship.http.github import RunnerScope, remove_runner_label
from gpuship.route.labels import remove_labels

TOKEN = "ghs_runner-admin-token"


class StandIn(StandInApi):
    """Runner 42, `a100-7`, of acme/app and its labels; redirects every GET when told."""

    def __init__(self) -> None:
        super().__init__(Handler)
        self.labels: dict[int, list[str]] = {42: ["gpu", "gpu-a100-570"]}
        self.redirect_to: str | None = None


class Handler(ApiHandler):
    server: StandIn

    def do_GET(self) -> None:
        self.record()
        if self.server.redirect_to:
            self.send_response(302)
            self.send_header("Location", self.server.redirect_to + self.path)
            self.end_headers()
            return
        if self.path == "/repos/acme/app/actions/runners?name=a100-7":
            self.reply(200, {"total_count": 1, "runners": [{"id": 42, "name": "a100-7"}]})
        else:
            self.reply(200, {"total_count": 0, "runners": []})

    def do_DELETE(self) -> None:
        self.record()
        prefix = "/repos/acme/app/actions/runners/42/labels/"
        label = self.path.removeprefix(prefix)
        if self.path.startswith(prefix) and label in self.server.labels[42]:
            self.server.labels[42].remove(label)
            names = [{"id": 1, "name": n, "type": "custom"} for n in self.server.labels[42]]
            self.reply(200, {"total_count": len(names), "labels": names})
        else:
            self.reply(404, {"message": "Not Found"})


@pytest.fixture
def github() -> Iterator[StandIn]:
    server = StandIn()
    with server.serving():
        yield server


def _scope(server: StandIn) -> RunnerScope:
    return RunnerScope.of(server.url, "acme/app")


def test_the_label_is_removed_with_the_documented_calls(github: StandIn) -> None:
    message = remove_runner_label(_scope(github), TOKEN, "a100-7", "gpu-a100-570")
    assert message == "runner a100-7: label gpu-a100-570 removed"
    assert github.labels[42] == ["gpu"]
    calls = [(method, path) for method, path, _ in github.requests]
    assert calls == [
        ("GET", "/repos/acme/app/actions/runners?name=a100-7"),
        ("DELETE", "/repos/acme/app/actions/runners/42/labels/gpu-a100-570"),
    ]
    for _, _, headers in github.requests:
        assert headers["authorization"] == f"Bearer {TOKEN}"
        assert headers["x-github-api-version"] == "2022-11-28"
        assert headers["accept"] == "application/vnd.github+json"


def test_a_label_already_gone_and_an_unknown_runner_change_nothing(github: StandIn) -> None:
    scope = _scope(github)
    remove_runner_label(scope, TOKEN, "a100-7", "gpu-a100-570")
    again = remove_runner_label(scope, TOKEN, "a100-7", "gpu-a100-570")
    assert again == "runner a100-7: carries no label gpu-a100-570 (already removed)"
    unknown = remove_runner_label(scope, TOKEN, "ghost", "gpu")
    assert unknown == "runner ghost: 0 runners of that name under repos/acme/app; left as is"
    assert github.labels[42] == ["gpu"]


def test_a_redirect_is_refused_so_the_token_goes_nowhere_else(github: StandIn) -> None:
    elsewhere = StandIn()
    with elsewhere.serving():
        github.redirect_to = elsewhere.url
        with pytest.raises(EnvironmentUnavailable, match="HTTP 302"):
            remove_runner_label(_scope(github), TOKEN, "a100-7", "gpu-a100-570")
    assert elsewhere.requests == []


def test_dry_run_removes_nothing_and_says_what_apply_would(github: StandIn) -> None:
    removals = json.dumps([{"runner": "a100-7", "label": "gpu-a100-570", "rule": "GSV404"}])
    [note] = remove_labels(removals, None)
    assert note.message == "dry run: would take label gpu-a100-570 off runner a100-7"
    assert github.requests == []
    scope = _scope(github)
    [done] = remove_labels(removals, lambda r, lb: remove_runner_label(scope, TOKEN, r, lb))
    assert done.message == "runner a100-7: label gpu-a100-570 removed"
    assert done.rule == "GSV404"


@pytest.mark.parametrize(
    ("api", "where"),
    [("file:///etc", "acme/app"), ("https://api.github.com", "acme"), ("https://x", "a/b/c")],
)
def test_a_scope_or_api_url_that_names_no_runners_is_an_input_error(api: str, where: str) -> None:
    with pytest.raises(InputError):
        RunnerScope.of(api, where)


def test_an_organizations_runners() -> None:
    assert RunnerScope.of("https://api.github.com/", "org:acme").owner == "orgs/acme"
