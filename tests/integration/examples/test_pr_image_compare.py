"""pr-image-compare.yml and pr-image-comment.yml under act: the pull request's changed cell is
built, pushed under its candidate tag and compared with its tag's image; its report becomes
one comment per image, created once, then updated in place.

GitHub's REST API cannot run here, so `CommentsApi` below is a STAND-IN for it
(`bed.github_api`): a small HTTP server on 127.0.0.1 serving the four calls actions/comment
makes (get a pull request, list, create and update issue comments), recording each request. act
points `github.api_url` at it (`--env GITHUB_API_URL`). Everything else is real: act runs the
example workflows, the bed's dockerd builds and its registry holds the images, the artifact
stand-ins hand the reports from one workflow to the other, and the reports are `gpuship inspect
--compare` Markdown. The comment body is a golden file (golden/pr-comment/comment.md).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from example_harness import USER_REPOSITORY, user_repository

from bed.github_api import ApiHandler, StandInApi
from bed.oci import make_image, write_oci_layout

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).parent / "golden" / "pr-comment" / "comment.md"
HEAD = "c0ffee" + "0" * 34
TOKEN = "gpuship-test-token-0123456789"
BOT = "github-actions[bot]"
PULL = 7
MARKER = "<!-- gpuship-compare image=sample-cu126 -->"


class CommentsApi(StandInApi):
    """Issue comments of one pull request."""

    def __init__(self) -> None:
        super().__init__(_Handler)
        self.comments: list[dict[str, Any]] = [
            # A person quoting the marker: the action must leave it alone.
            {"id": 1, "user": {"login": "someone"}, "body": MARKER + "\nnot the bot's"}
        ]


class _Handler(ApiHandler):
    server: CommentsApi

    def _authorized(self) -> bool:
        self.record()
        if self.authorization() != f"Bearer {TOKEN}":
            self.reply(401, {"message": "Bad credentials"})
            return False
        return True

    def do_GET(self) -> None:
        if not self._authorized():
            return
        base = f"/repos/{USER_REPOSITORY}"
        if self.path == f"{base}/pulls/{PULL}":
            self.reply(200, {"number": PULL, "head": {"sha": HEAD}})
        elif self.path.startswith(f"{base}/issues/{PULL}/comments?"):
            page = int(re.search(r"page=(\d+)", self.path.split("per_page")[1]).group(1))  # type: ignore[union-attr]
            self.reply(200, self.server.comments if page == 1 else [])
        else:
            self.reply(404, {"message": "Not Found"})

    def do_POST(self) -> None:
        if not self._authorized():
            return
        comment = {"id": 100 + len(self.server.comments), "user": {"login": BOT}, **self.body()}
        self.server.comments.append(comment)
        self.reply(201, comment)

    def do_PATCH(self) -> None:
        if not self._authorized():
            return
        wanted = int(self.path.rsplit("/", 1)[1])
        for comment in self.server.comments:
            if comment["id"] == wanted:
                comment.update(self.body())
                self.reply(200, comment)
                return
        self.reply(404, {"message": "Not Found"})


@pytest.fixture
def api() -> Iterator[CommentsApi]:
    server = CommentsApi()
    with server.serving():
        yield server


def _report(folder: Path, app: bytes) -> Path:
    """A report folder as pr-image-compare.yml uploads it, made by the real gpuship."""
    folder.mkdir(parents=True)
    base = {"etc/os-release": b"ID=test\n"}
    history = [{"created_by": "COPY base /"}, {"created_by": "COPY app /"}]
    write_oci_layout(
        folder / "reference", make_image([base, {"app/x": b"x" * 100}], history=history), tag="v1"
    )
    write_oci_layout(
        folder / "candidate", make_image([base, {"app/x": app}], history=history), tag="v2"
    )
    out = folder / "report"
    out.mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpuship",
            "inspect",
            "oci:candidate:v2",
            "--compare",
            "oci:reference:v1",
            "--format",
            "markdown",
            "--output",
            "report/compare.md",
            "--fail-on",
            "never",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (out / "meta.json").write_text(json.dumps({"image": "sample-cu126", "pull_request": PULL}))
    shutil.rmtree(folder / "reference")
    shutil.rmtree(folder / "candidate")
    return out


def _bot_comments(api: CommentsApi) -> list[dict[str, Any]]:
    return [c for c in api.comments if c["user"]["login"] == BOT]


def test_one_comment_per_image_updated_in_place(
    api: CommentsApi, run_workflow: Any, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    user_repository(repo, "pr-image-comment.yml", None, {})
    payload = {"workflow_run": {"id": 4242, "event": "pull_request", "head_sha": HEAD}}

    def run(report: Path) -> Any:
        return run_workflow(
            repo,
            "pr-image-comment.yml",
            event="workflow_run",
            payload=payload,
            secrets={"GITHUB_TOKEN": TOKEN},
            act_env={"GITHUB_API_URL": api.url},
            artifacts={"compare-sample-cu126": report},
        )

    first = run(_report(tmp_path / "first", b"x" * 5000))
    assert first.job_results("comment") == ["success"], first.explain()
    (comment,) = _bot_comments(api)
    assert comment["body"] == GOLDEN.read_text(encoding="utf-8")
    assert first.records("download-artifact")[0]["run_id"] == "4242"

    second = run(_report(tmp_path / "second", b"x" * 9000))
    assert second.job_results("comment") == ["success"], second.explain()
    (updated,) = _bot_comments(api)
    assert updated["id"] == comment["id"] and "+8.7 KiB" in updated["body"]
    methods = [method for method, _, _ in api.requests]
    assert methods.count("POST") == 1 and methods.count("PATCH") == 1
    assert api.comments[0]["body"] == MARKER + "\nnot the bot's"
    assert all(h["authorization"] == f"Bearer {TOKEN}" for _, _, h in api.requests)
    assert TOKEN not in first.log + second.log


def test_a_report_for_another_pull_request_head_is_refused(
    api: CommentsApi, run_workflow: Any, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    user_repository(repo, "pr-image-comment.yml", None, {})
    payload = {"workflow_run": {"id": 1, "event": "pull_request", "head_sha": "f" * 40}}
    run = run_workflow(
        repo,
        "pr-image-comment.yml",
        event="workflow_run",
        payload=payload,
        secrets={"GITHUB_TOKEN": TOKEN},
        act_env={"GITHUB_API_URL": api.url},
        artifacts={"compare-sample-cu126": _report(tmp_path / "r", b"x" * 10)},
    )
    assert run.job_results("comment") == ["failure"], run.explain()
    assert _bot_comments(api) == []
    assert "not the build's ffffffffffff" in run.log


def test_pr_image_compare_builds_the_changed_cell_and_uploads_its_report(
    run_example: Any, registry: Any, docker_engine: Any
) -> None:
    from test_examples import EXAMPLES, push_cuda_base

    base = "examples/pr-compare/cuda-base"
    push_cuda_base(registry, base, "12.6-runtime", "12.6")
    # What the cell's tag points at now: the base alone (the pull request adds the app).
    push_cuda_base(registry, "sample/app", "cu126-py3.12", "12.6")
    sample = (EXAMPLES / "sample-project" / "gpuship.yaml").read_text()
    config = sample.replace('python: ["3.11", "3.12"]', 'python: ["3.12"]')
    config = config.replace('cuda: ["12.4", "12.6"]', 'cuda: ["12.6"]').replace(
        "sample/cuda-base", base
    )
    payload: dict[str, Any] = {"pull_request": {"number": PULL, "base": {"sha": ""}}}
    environment = docker_engine.cli_env()

    def prepare(repo: Path) -> None:
        """The base branch commit (locked), then the pull request's change to the app."""
        git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
        subprocess.run(
            [sys.executable, "-m", "gpuship", "lock"], cwd=repo, env=environment, check=True
        )
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "base"], check=True)
        sha = subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
        payload["pull_request"]["base"]["sha"] = sha.stdout.strip()
        (repo / "app" / "added.py").write_text("print('the pull request')\n")

    run = run_example(
        "pr-image-compare.yml",
        event="pull_request",
        registry_host=registry.host,
        files={"gpuship.yaml": config},
        prepare=prepare,
        payload=payload,
        env=docker_engine.env,
    )
    assert run.job_results("changed") == ["success"], run.explain()
    assert run.job_results("compare") == ["success"], run.explain()
    report = run.artifacts_dir / "compare-sample-cuda12.6-python3.12"
    meta = json.loads((report / "meta.json").read_text())
    assert meta == {"image": "sample-cuda12.6-python3.12", "pull_request": PULL}
    markdown = (report / "compare.md").read_text()
    assert f"against {registry.host}/sample/app:cu126-py3.12" in markdown
    assert "/opt/app/added.py" in markdown and "1 shared" in markdown
