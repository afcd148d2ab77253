"""Generated reference pages: current in the repository, and stale detection works."""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

from gpuship.cli.commands import docs as docs_command
from gpuship.cli.context import Context
from gpuship.cli.rules_catalog import all_rules
from gpuship.docs.actions import discover_actions
from gpuship.report.json_format import report_document
from gpuship.report.model import DOCS_BASE
from json_results import checked

REPO = Path(__file__).parents[3]


def run_docs(root: Path, check: bool) -> docs_command.Report:
    ctx = Context(config_path=None, environ={})
    args = argparse.Namespace(root=str(root), check=check, image_map=False, lock=None)
    report = docs_command.run(args, ctx)
    checked(report_document(report))
    return report


def test_committed_docs_match_action_files_and_schema() -> None:
    report = run_docs(REPO, check=True)
    stale = [finding.message for finding in report.findings]
    assert stale == [], "run `gpuship docs` and commit: " + "; ".join(stale)


def test_every_action_input_and_output_is_documented() -> None:
    for doc in discover_actions(REPO):
        page = (REPO / "docs" / "actions" / f"{doc.slug}.md").read_text()
        for name in [*doc.metadata.inputs, *doc.metadata.outputs]:
            assert f"| `{name}` |" in page, f"{doc.slug}: {name} missing"


def test_check_detects_a_changed_action(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(REPO / "actions", root / "actions", ignore=shutil.ignore_patterns("*.sh"))
    shutil.copy(REPO / "action.yml", root / "action.yml")
    shutil.copy(REPO / "README.md", root / "README.md")
    assert run_docs(root, check=False).headline.endswith("pages generated")
    assert run_docs(root, check=True).findings == []
    action = root / "action.yml"
    action.write_text(action.read_text().replace("Directory the command runs in.", "Elsewhere."))
    stale = run_docs(root, check=True)
    assert {Path(f.location.file).name for f in stale.findings if f.location} >= {
        "gpuship.md",
        "README.md",
    }
    assert stale.findings[0].severity.value == "error"


def test_every_rules_help_uri_is_a_page_in_the_repository() -> None:
    # help_uri is what SARIF, annotations and the JSON report link to; each must resolve to
    # the page `gpuship docs` generates for the rule, committed in docs/rules/.
    entries = all_rules()
    assert {e.catalog.name for e in entries} >= {"lint", "image", "verify", "release", "kb"}
    for entry in entries:
        uri = entry.rule.help_uri
        assert uri.startswith(DOCS_BASE + "/"), uri
        page = REPO / "docs" / uri.removeprefix(DOCS_BASE + "/")
        assert page.is_file(), f"{entry.rule.id}: {uri} has no page {page}"
        assert page.read_text(encoding="utf-8").startswith(f"# {entry.rule.id} ")


def test_rule_ids_are_unique_and_name_their_stage() -> None:
    prefixes = {"lint": "GSL", "image": "GSI", "build": "GSB", "verify": "GSV"}
    prefixes |= {"route": "GSQ", "probe": "GSP", "release": "GSR", "kb": "GSK", "docs": "GSD"}
    ids = [entry.rule.id for entry in all_rules()]
    assert len(ids) == len(set(ids))
    for entry in all_rules():
        assert re.fullmatch(r"GS[A-Z]\d{3}", entry.rule.id), entry.rule.id
        assert entry.rule.id.startswith(prefixes[entry.catalog.name]), entry.rule.id
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", entry.rule.name), entry.rule.name


def test_the_rules_command_offers_every_stage() -> None:
    import argparse

    from gpuship.cli.commands.rules import add_arguments
    from gpuship.cli.rules_catalog import rule_catalogs

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (stage,) = [action for action in parser._actions if action.dest == "stage"]
    assert list(stage.choices or ()) == [catalog.name for catalog in rule_catalogs()]
