"""The audit document: stable published schema, round trip, and clear errors on bad files."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from compat_builders import A100, audit, gpu

from gpuship.compat.audit import SCHEMA_PATH, audit_json_schema, load_audit
from gpuship.errors import InputError


def test_published_schema_matches_the_model() -> None:
    # A change to the audit model must come with a new audit.schema.json (and, when a
    # field changes meaning or disappears, a new schema_version).
    assert json.loads(SCHEMA_PATH.read_text()) == audit_json_schema()


def test_written_audit_validates_against_the_schema_and_round_trips(tmp_path: Path) -> None:
    written = audit(550, [gpu(**A100)], labels=["gpu-a100"])
    document = written.model_dump(mode="json")
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(document))
    assert load_audit(path) == written


def test_gpuship_json_report_envelope_is_accepted(tmp_path: Path) -> None:
    written = audit(535, [gpu(**A100)])
    path = tmp_path / "report.json"
    envelope = {"tool": "gpuship", "command": "audit", "result": written.model_dump(mode="json")}
    path.write_text(json.dumps(envelope))
    assert load_audit(path) == written


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ('{"schema_version": 4}', "schema_version 4 is not supported"),
        ('{"schema_version": 1, "runner": {}}', "not a gpuship audit"),
        ("[" * 100_000 + "]" * 100_000, r"JSON nests deeper than 64 levels \(limit"),
        ('{"schema_version": ' + "9" * 100_000 + "}", "not JSON"),
    ],
    ids=["not-json", "schema-version", "not-an-audit", "deep", "huge-number"],
)
def test_bad_audit_files_are_one_line_input_errors(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "audit.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message) as raised:
        load_audit(path)
    assert str(path) in str(raised.value)
    assert "\n" not in str(raised.value)


def test_missing_audit_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read audit file"):
        load_audit(tmp_path / "absent.json")


def test_version_1_audits_from_older_runners_still_read(tmp_path: Path) -> None:
    # Published by a runner on an older gpuship: no CDI refresh or spec driver readings.
    document = audit(550, [gpu(**A100)]).model_dump(mode="json")
    document["schema_version"] = 1
    del document["container"]["cdi_refresh_units"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    loaded = load_audit(path)
    assert loaded.schema_version == 1
    assert loaded.container.cdi_refresh_units is None
