"""Post or update one pull-request comment per image from `gpuship inspect --compare` reports.

Run by actions/comment/action.yml in a `workflow_run` job that holds a token: everything read
from the reports folder came from a pull request's build, so it is data only. Each report
folder holds `meta.json` ({"image": NAME, "pull_request": N}) and `compare.md`; the image
name and number are validated, the Markdown is bounded and any copy of gpuship's marker in it
is defused, so a report can neither run code nor pose as another image's comment.

One comment per image and pull request: the first line is a hidden marker naming the image;
an existing comment with that marker, written by `author`, is updated (PATCH), else one is
created (POST). With `head-sha`, the pull request's head must be that commit, so a report
cannot comment on a pull request other than the one whose build made it.

Standard library only (GitHub REST API v3 through urllib), so the job installs nothing.
The token comes from the environment and is only ever sent to `api-url`.
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

MARKER = "<!-- gpuship-compare image={image} -->"
MARKER_PREFIX = "<!-- gpuship-compare"
IMAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$")
PULL_NUMBER = re.compile(r"^[1-9][0-9]{0,9}$")
HEAD_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
# GitHub refuses a comment body over 65,536 characters.
BODY_MAX_CHARS = 60_000
REPORT_MAX_BYTES = 1 << 20
MAX_REPORTS = 100
MAX_PAGES = 50
TIMEOUT_S = 30


class CommentError(Exception):
    """One line for the step log; the step fails with it."""


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def _api_base(url: str) -> str:
    parsed = urllib.parse.urlsplit(url)
    local = parsed.hostname in ("127.0.0.1", "localhost", "::1")
    if parsed.scheme != "https" and not (parsed.scheme == "http" and local):
        raise CommentError(f"api-url {url!r}: must be https (http only for a local host)")
    return url.rstrip("/")


class GitHub:
    """The three REST calls the action makes, with the token for `base` only."""

    def __init__(self, base: str, repository: str, token: str) -> None:
        self.base = base
        self.repository = repository
        self._token = token

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        # `base` passed _api_base: https, or http to this host only.
        request = urllib.request.Request(f"{self.base}{path}", data=data, method=method)  # noqa: S310
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        request.add_header("Authorization", f"Bearer {self._token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310
                payload = response.read(8 << 20)
        except urllib.error.HTTPError as error:
            raise CommentError(f"{method} {path}: HTTP {error.code} {error.reason}") from None
        except (urllib.error.URLError, OSError) as error:
            raise CommentError(f"{method} {path}: {error}") from None
        return json.loads(payload) if payload else None

    def comments(self, number: int) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for page in range(1, MAX_PAGES + 1):
            path = f"/repos/{self.repository}/issues/{number}/comments?per_page=100&page={page}"
            batch = self.call("GET", path)
            if not isinstance(batch, list) or not batch:
                break
            found.extend(item for item in batch if isinstance(item, dict))
        return found


def read_report(folder: Path) -> tuple[str, int, str]:
    """(image, pull request number, Markdown) of one report folder, validated."""
    try:
        meta = json.loads((folder / "meta.json").read_bytes()[:65536])
        markdown = (folder / "compare.md").read_bytes()[: REPORT_MAX_BYTES + 1]
    except (OSError, ValueError) as error:
        raise CommentError(f"{folder.name}: unreadable report ({error})") from None
    image = str(meta.get("image", "")) if isinstance(meta, dict) else ""
    number = str(meta.get("pull_request", "")) if isinstance(meta, dict) else ""
    if not IMAGE_NAME.match(image) or "--" in image:
        raise CommentError(f"{folder.name}/meta.json: image {image[:80]!r} is not an image name")
    if not PULL_NUMBER.match(number):
        raise CommentError(f"{folder.name}/meta.json: pull_request {number[:20]!r} is not a number")
    return image, int(number), markdown.decode("utf-8", "replace")


def comment_body(image: str, markdown: str) -> str:
    """The marker line, then the report with any marker in it defused, bounded."""
    text = markdown.replace(MARKER_PREFIX, "&lt;!-- gpuship-compare")
    if len(text) > BODY_MAX_CHARS:
        text = (
            text[:BODY_MAX_CHARS] + "\n\n_(report cut at 60,000 characters; see the job summary)_\n"
        )
    return MARKER.format(image=image) + "\n" + text


def upsert(github: GitHub, number: int, image: str, body: str, author: str) -> tuple[str, int]:
    """Update this image's comment on pull request `number`, or create it."""
    marker = MARKER.format(image=image)
    for comment in github.comments(number):
        user = comment.get("user") or {}
        first = str(comment.get("body", "")).split("\n", 1)[0].strip()
        if first == marker and user.get("login") == author:
            path = f"/repos/{github.repository}/issues/comments/{int(comment['id'])}"
            github.call("PATCH", path, {"body": body})
            return "updated", int(comment["id"])
    created = github.call(
        "POST", f"/repos/{github.repository}/issues/{number}/comments", {"body": body}
    )
    return "created", int(created["id"])


def check_head(github: GitHub, number: int, head_sha: str) -> None:
    """CommentError unless pull request `number`'s head is `head_sha`."""
    pull = github.call("GET", f"/repos/{github.repository}/pulls/{number}")
    actual = str(((pull or {}).get("head") or {}).get("sha", ""))
    if actual != head_sha:
        raise CommentError(
            f"pull request #{number} is at {actual[:12] or 'an unknown commit'}, not the "
            f"build's {head_sha[:12]}: not commenting"
        )


def main() -> int:
    try:
        repository = _env("INPUT_REPOSITORY")
        if not REPOSITORY.match(repository):
            raise CommentError(f"repository {repository[:80]!r} is not OWNER/NAME")
        head_sha = _env("INPUT_HEAD_SHA")
        if head_sha and not HEAD_SHA.match(head_sha):
            raise CommentError(f"head-sha {head_sha[:80]!r} is not a commit id")
        token = _env("INPUT_TOKEN")
        if not token:
            raise CommentError("no token: pass the job's github.token")
        github = GitHub(_api_base(_env("INPUT_API_URL")), repository, token)
        root = Path(_env("INPUT_REPORTS", "."))
        folders = sorted(path.parent for path in root.glob("*/meta.json"))
        if root.joinpath("meta.json").is_file():
            folders.insert(0, root)
        if not folders:
            raise CommentError(f"{root}: no report folder (meta.json and compare.md)")
        if len(folders) > MAX_REPORTS:
            raise CommentError(f"{root}: {len(folders)} reports, more than {MAX_REPORTS}")
        done = []
        for folder in folders:
            image, number, markdown = read_report(folder)
            if head_sha:
                check_head(github, number, head_sha)
            how, comment_id = upsert(
                github, number, image, comment_body(image, markdown), _env("INPUT_AUTHOR")
            )
            print(f"{how} comment {comment_id} for {image} on #{number}")
            done.append(f"{image}={how}")
    except CommentError as error:
        print(f"::error title=gpuship comment::{error}", file=sys.stderr)
        _outputs(exit_code=1)
        return 1
    _outputs(exit_code=0, comments=" ".join(done))
    return 0


def _outputs(exit_code: int, comments: str = "") -> None:
    with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
        out.write(f"comments={comments}\nexit-code={exit_code}\n")


if __name__ == "__main__":
    sys.exit(main())
