"""Each stage is declared once (`cli/stages.py`), and every list the CLI keeps of the stages
is derived from that declaration or, for pyproject's import contracts, agrees with it: a stage
missing from any of them fails here."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gpuship
from gpuship.cli import extras
from gpuship.cli.config_catalog import config_model
from gpuship.cli.context import Context
from gpuship.cli.registry import MODULES, load_command
from gpuship.cli.rules_catalog import rule_catalogs, stage_rules
from gpuship.cli.stages import CATALOG_COMMANDS, STAGES, StageSpec, command_names, commands

tomllib = pytest.importorskip("tomllib")
ROOT = Path(__file__).resolve().parents[3]
SRC = Path(gpuship.__file__).parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
STAGE_IDS = [stage.name for stage in STAGES]
# Packages import-linter may let import the docker SDK: the adapter itself, and registry/,
# which reads Docker's credential store through `docker.auth` (never the engine).
DOCKER_SDK_USERS = {"docker", "registry"}


def _contract(contract_id: str) -> dict[str, object]:
    contracts = PYPROJECT["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["id"] == contract_id]
    return dict(contract)


def _packages() -> set[str]:
    return {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}


def test_every_package_with_a_rule_catalog_is_a_declared_stage() -> None:
    with_rules = {p.parent.name for p in SRC.glob("*/rules.py")}
    assert with_rules == set(STAGE_IDS)


def test_the_stages_are_the_stage_layer_of_the_layers_contract() -> None:
    layers = _contract("layers")["layers"]
    assert isinstance(layers, list)
    stage_layer = {name.strip() for name in layers[1].split("|")}
    assert stage_layer == {f"gpuship.{name}" for name in STAGE_IDS}


def test_every_package_but_the_docker_sdk_users_is_kept_from_the_docker_sdk() -> None:
    sources = _contract("one-docker-adapter")["source_modules"]
    assert isinstance(sources, list)
    assert len(sources) == len(set(sources))
    expected = {f"gpuship.{name}" for name in _packages() - DOCKER_SDK_USERS}
    assert set(sources) == expected
    assert {f"gpuship.{name}" for name in STAGE_IDS} <= set(sources)


def test_every_command_module_is_a_declared_command_named_after_its_file() -> None:
    on_disk = {p.stem for p in (SRC / "cli" / "commands").glob("*.py")} - {"__init__"}
    assert on_disk == set(command_names()) == set(MODULES)
    assert len(command_names()) == len(set(command_names()))
    assert set(commands()) | set(CATALOG_COMMANDS) == set(command_names())
    for name in command_names():
        assert name == load_command(name).NAME


def test_help_lists_the_stages_from_pull_request_to_release_then_reference_tools() -> None:
    names = command_names()
    assert names[0] == "lint" and names[-1] == "schema"
    assert names.index("prune") < names.index("rules") < names.index("kb")


@pytest.mark.parametrize("stage", STAGES, ids=STAGE_IDS)
def test_each_stage_has_its_rules_under_its_heading(stage: StageSpec) -> None:
    (catalog,) = [c for c in rule_catalogs() if c.name == stage.rules.name]
    own = stage_rules(stage)
    assert own, f"{stage.rules_module} declares no RULES"
    assert set(own) <= set(catalog.rules)
    assert catalog.title == stage.rules.title  # stages sharing a heading share its title


def test_the_rule_index_page_has_a_heading_per_catalog() -> None:
    index = (ROOT / "docs" / "rules" / "README.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", index, re.MULTILINE)
    assert headings == [catalog.title for catalog in rule_catalogs()]


@pytest.mark.parametrize("stage", [s for s in STAGES if s.config], ids=lambda s: s.name)
def test_each_stage_section_is_a_key_of_the_config_and_its_reference(stage: StageSpec) -> None:
    spec = stage.config
    assert spec is not None
    module, _, name = spec.model.partition(":")
    model = getattr(importlib.import_module(module), name)
    field = config_model().model_fields[spec.key]
    assert field.annotation == (list[model] if spec.many else model)
    assert f"`{spec.key}`" in (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    # Its variables count as config input, so a run given only them validates them.
    variable = f"GPUSHIP_{spec.key.upper()}__X"
    assert Context(config_path=None, environ={variable: "1"}).has_config_input


def test_sections_that_switch_rules_have_the_keys_that_do() -> None:
    for stage in STAGES:
        if stage.config is not None and stage.config.switches_rules:
            fields = config_model().model_fields[stage.config.key].annotation
            assert {"enable", "disable", "severity"} <= set(getattr(fields, "model_fields", {}))


def test_each_extra_is_declared_once_and_every_command_names_a_declared_one() -> None:
    declared = [stage.extra.name for stage in STAGES if stage.extra]
    assert len(declared) == len(set(declared))
    optional = PYPROJECT["project"]["optional-dependencies"]
    assert set(declared) == set(optional) - {"all", "test"}
    for command in commands().values():
        assert command.extra is None or command.extra in extras.EXTRAS, command.name
    assert "image" in extras.EXTRAS  # what `--image` needs


@pytest.mark.parametrize("name", command_names())
def test_each_command_has_its_published_result_schema(name: str) -> None:
    schema = json.loads((ROOT / "docs" / "results" / f"{name}.schema.json").read_text())
    assert schema["title"] == f"gpuship {name} --format json"


def test_the_stage_list_imports_no_stage() -> None:
    # Plain data: the CLI reads it on every start, `gpuship lint` included.
    script = "import sys, gpuship.cli.stages; print(sorted(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded = [name for name in done.stdout.strip("[]\n").split(", ") if "gpuship" in name]
    assert loaded == ["'gpuship'", "'gpuship.cli'", "'gpuship.cli.stages'"]
