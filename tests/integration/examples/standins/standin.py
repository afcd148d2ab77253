"""Local stand-ins for third-party actions that need GitHub, used ONLY by the example tests.

Each composite action beside this file (checkout, codeql-action/upload-sarif, upload-artifact,
download-artifact, create-pull-request) runs `standin.py <name>` with its inputs in
`INPUT_*` variables. Instead of talking to GitHub, each does the local equivalent and appends
one JSON line describing what it received to `$GPUSHIP_STANDIN_RECORDS/<name>.jsonl`, so a
test can assert on it. The test harness sets:

- GPUSHIP_STANDIN_RECORDS: folder for the `<name>.jsonl` records;
- GPUSHIP_STANDIN_ARTIFACTS: folder standing in for the run's artifact storage;
- GPUSHIP_STANDIN_CHECKOUT_SOURCE: the user repository that `checkout` copies;
- GPUSHIP_SARIF_SCHEMA: the SARIF 2.1.0 JSON Schema that `upload-sarif` validates against.

Standard library plus `jsonschema` (the test extra); any failure exits 1 with one line on
stderr, as the real action would fail the step.
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


class StandinError(Exception):
    """What the real action would have failed the step with."""


def _input(name: str, default: str = "") -> str:
    return os.environ.get(f"INPUT_{name.upper().replace('-', '_')}", default).strip()


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip()]


def _workspace() -> Path:
    return Path(os.environ["GITHUB_WORKSPACE"])


def _record(name: str, entry: dict[str, Any]) -> None:
    records = Path(os.environ["GPUSHIP_STANDIN_RECORDS"])
    records.mkdir(parents=True, exist_ok=True)
    entry = {"job": os.environ.get("GITHUB_JOB", ""), **entry}
    with (records / f"{name}.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry, sort_keys=True) + "\n")


def _set_output(name: str, value: str) -> None:
    with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
        out.write(f"{name}={value}\n")


def checkout() -> None:
    """Copy the user repository into the workspace (or a sub-path of it)."""
    source = Path(os.environ["GPUSHIP_STANDIN_CHECKOUT_SOURCE"])
    destination = _workspace() / _input("path")
    # `fetch-depth: 0` checks out the whole history, which a step may diff against.
    history = _input("fetch-depth") == "0"
    ignore = None if history else shutil.ignore_patterns(".git")
    shutil.copytree(source, destination, dirs_exist_ok=True, ignore=ignore)
    _record(
        "checkout",
        {
            "repository": _input("repository"),
            "ref": _input("ref"),
            "path": _input("path"),
            "fetch-depth": _input("fetch-depth"),
            "persist-credentials": _input("persist-credentials"),
        },
    )


def upload_sarif() -> None:
    """Validate every SARIF file named (a file or a folder of *.sarif) and record its content."""
    import jsonschema

    target = _workspace() / _input("sarif_file")
    files = sorted(target.glob("*.sarif")) if target.is_dir() else [target]
    if not files or not all(path.is_file() for path in files):
        raise StandinError(f"Path does not exist: {target}")
    schema = json.loads(Path(os.environ["GPUSHIP_SARIF_SCHEMA"]).read_text(encoding="utf-8"))
    digest = hashlib.sha256()
    for path in files:
        data = path.read_bytes()
        digest.update(data)
        try:
            sarif = json.loads(data)
        except json.JSONDecodeError as exc:
            raise StandinError(f"Invalid SARIF. JSON syntax error in {path}: {exc}") from exc
        validator = jsonschema.validators.validator_for(schema)(schema)  # draft-04
        errors = sorted(validator.iter_errors(sarif), key=str)
        if errors:
            raise StandinError(f"Invalid SARIF {path}: {errors[0].message}")
        runs = sarif["runs"]
        _record(
            "upload-sarif",
            {
                "file": str(path.relative_to(_workspace())),
                "category": _input("category"),
                "tools": [run["tool"]["driver"]["name"] for run in runs],
                "rules": sorted(
                    {rule["id"] for run in runs for rule in run["tool"]["driver"].get("rules", [])}
                ),
                "results": [
                    {"ruleId": result.get("ruleId"), "level": result.get("level")}
                    for run in runs
                    for result in run.get("results", [])
                ],
            },
        )
    _set_output("sarif-id", digest.hexdigest())


def _common_root(paths: list[Path]) -> Path:
    """The least common ancestor of the files, as upload-artifact roots an artifact."""
    if len(paths) == 1:
        return paths[0].parent
    return Path(os.path.commonpath([str(path) for path in paths]))


def upload_artifact() -> None:
    """Copy the matched files into $GPUSHIP_STANDIN_ARTIFACTS/<name>/."""
    name = _input("name", "artifact") or "artifact"
    found: list[Path] = []
    for pattern in _lines(_input("path")):
        root = pattern if os.path.isabs(pattern) else str(_workspace() / pattern)
        for match in sorted(glob.glob(root, recursive=True)):
            path = Path(match)
            if path.is_dir():
                found.extend(p for p in sorted(path.rglob("*")) if p.is_file())
            else:
                found.append(path)
    if not found:
        behaviour = _input("if-no-files-found", "warn")
        message = f"No files were found with the provided path: {_input('path')}"
        if behaviour == "error":
            raise StandinError(message)
        if behaviour == "warn":
            print(f"::warning::{message}. No artifacts will be uploaded.")
        _record("upload-artifact", {"name": name, "files": []})
        return
    store = Path(os.environ["GPUSHIP_STANDIN_ARTIFACTS"]) / name
    if store.exists():
        if _input("overwrite") != "true":
            raise StandinError(f"an artifact with the name '{name}' already exists")
        shutil.rmtree(store)
    root = _common_root(found)
    files = sorted({str(path.relative_to(root)) for path in found})
    for relative in files:
        (store / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / relative, store / relative)
    _record("upload-artifact", {"name": name, "files": files})
    _set_output("artifact-id", hashlib.sha256(name.encode()).hexdigest()[:12])


def download_artifact() -> None:
    """Copy one artifact (or all matching `pattern`) from the local store into the workspace."""
    store = Path(os.environ["GPUSHIP_STANDIN_ARTIFACTS"])
    destination = _workspace() / _input("path")
    name = _input("name")
    if name:
        if not (store / name).is_dir():
            raise StandinError(
                f"Unable to download artifact(s): Artifact not found for name: {name}"
            )
        shutil.copytree(store / name, destination, dirs_exist_ok=True)
        names = [name]
    else:
        pattern = _input("pattern") or "*"
        names = sorted(p.name for p in store.iterdir() if fnmatch.fnmatch(p.name, pattern))
        merge = _input("merge-multiple") == "true"
        for each in names:
            shutil.copytree(
                store / each, destination if merge else destination / each, dirs_exist_ok=True
            )
    _record(
        "download-artifact", {"names": names, "path": _input("path"), "run_id": _input("run-id")}
    )
    _set_output("download-path", str(destination))


def _changed_files(source: Path, workspace: Path, add_paths: list[str]) -> dict[str, str]:
    """Files of the workspace that are new or differ from the checked-out repository."""
    changed: dict[str, str] = {}
    for path in sorted(workspace.rglob("*")):
        relative = path.relative_to(workspace)
        if not path.is_file() or relative.parts[0] == ".git":
            continue
        if add_paths and not any(fnmatch.fnmatch(str(relative), p) for p in add_paths):
            continue
        original = source / relative
        if not original.is_file() or original.read_bytes() != path.read_bytes():
            changed[str(relative)] = path.read_text(encoding="utf-8", errors="replace")
    return changed


def create_pull_request() -> None:
    """Record the branch, title, body and changed files instead of opening a pull request."""
    source = Path(os.environ["GPUSHIP_STANDIN_CHECKOUT_SOURCE"])
    changed = _changed_files(source, _workspace(), _lines(_input("add-paths")))
    operation = "created" if changed else "none"
    _record(
        "create-pull-request",
        {
            "operation": operation,
            "branch": _input("branch"),
            "base": _input("base"),
            "title": _input("title"),
            "body": _input("body"),
            "commit-message": _input("commit-message"),
            "labels": _lines(_input("labels")),
            "changed": changed,
        },
    )
    _set_output("pull-request-operation", operation)
    _set_output("pull-request-number", "1" if changed else "")


STANDINS: dict[str, Callable[[], None]] = {
    "checkout": checkout,
    "upload-sarif": upload_sarif,
    "upload-artifact": upload_artifact,
    "download-artifact": download_artifact,
    "create-pull-request": create_pull_request,
}


def main(argv: list[str]) -> int:
    """Run the stand-in named by argv[1]; 1 with one line on stderr when it fails."""
    try:
        STANDINS[argv[1]]()
    except StandinError as exc:
        print(f"::error::{exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
