"""Config loading: strict keys with file/line errors, did-you-mean, and precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuship.cli.config_catalog import load_config
from gpuship.cli.rules_catalog import rule_overrides
from gpuship.config.load import with_flags
from gpuship.config.locate import find_config_file
from gpuship.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gpuship.yaml"
    path.write_text(text)
    return path


def test_defaults_without_file() -> None:
    loaded = load_config(None, {})
    assert loaded.path is None
    assert loaded.config.fail_on == "error"
    assert loaded.config.registries.insecure == []


def test_file_values_are_read(tmp_path: Path) -> None:
    path = write(tmp_path, "fail-on: warning\nregistries:\n  insecure: [reg.internal:5000]\n")
    config = load_config(path, {}).config
    assert config.fail_on == "warning"
    assert config.registries.insecure == ["reg.internal:5000"]


def test_unknown_key_names_file_line_and_suggests(tmp_path: Path) -> None:
    path = write(tmp_path, "fail-on: error\nregistries:\n  insecur: [a]\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path, {})
    message = str(raised.value)
    assert message.startswith(f"{path}:3:3: registries.insecur: unknown key 'insecur'")
    assert "did you mean 'insecure'?" in message
    assert "\n" not in message


def test_bad_value_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "\n\nfail-on: sometimes\n")
    with pytest.raises(ConfigError, match=r"gpuship.yaml:3:1: fail-on: Input should be"):
        load_config(path, {})


def test_malformed_yaml_names_position(tmp_path: Path) -> None:
    path = write(tmp_path, "fail-on: [error\n")
    with pytest.raises(ConfigError, match=r"gpuship.yaml:2:1: invalid YAML"):
        load_config(path, {})


def test_top_level_must_be_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "- a\n- b\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(path, {})


def test_empty_file_is_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, ""), {}).config.fail_on == "error"


def test_precedence_file_env_cli(tmp_path: Path) -> None:
    path = write(tmp_path, "fail-on: note\nregistries:\n  insecure: [a]\n")
    env = {"GPUSHIP_FAIL_ON": "warning", "GPUSHIP_REGISTRIES__INSECURE": "[b, c]"}
    config = load_config(path, env).config
    assert config.fail_on == "warning"
    assert config.registries.insecure == ["b", "c"]
    assert with_flags(config, {"fail-on": "never"}).fail_on == "never"
    # None means "flag not given": the lower layers stand.
    assert with_flags(config, {"fail-on": None}).fail_on == "warning"


def test_env_error_names_variable() -> None:
    with pytest.raises(ConfigError, match=r"^environment GPUSHIP_FAIL_ON: fail-on: "):
        load_config(None, {"GPUSHIP_FAIL_ON": "loud"})


def test_env_variables_that_are_not_config_are_ignored() -> None:
    env = {"GPUSHIP_REGISTRY_USER": "bot", "GPUSHIP_PYTHON": "python3"}
    assert load_config(None, env).config.fail_on == "error"


def test_cli_override_error_names_option() -> None:
    config = load_config(None, {}).config
    with pytest.raises(ConfigError, match=r"^option fail-on: "):
        with_flags(config, {"fail-on": "loud"})


def test_find_config_file(tmp_path: Path) -> None:
    assert find_config_file(None, tmp_path) is None
    path = write(tmp_path, "")
    assert find_config_file(None, tmp_path) == path
    assert find_config_file("gpuship.yaml", tmp_path) == path
    with pytest.raises(ConfigError, match=r"config file other\.yaml not found"):
        find_config_file("other.yaml", tmp_path)


def test_one_rule_severity_from_the_environment_joins_the_files(tmp_path: Path) -> None:
    """`GPUSHIP_RULES__<KEY>` sets one key of `rules:` (and of `lint.severity`), beside the
    file's keys; before, such a variable was silently ignored."""
    path = write(tmp_path, "rules:\n  GSR201: warning\n  GSL103: note\n")
    env = {
        "GPUSHIP_RULES__GSR201": "off",
        "GPUSHIP_RULES__PRUNE_DELETE": "error",
        "GPUSHIP_LINT__SEVERITY__GSL104": "off",
    }
    config = load_config(path, env).config
    assert config.rules == {"GSR201": "warning", "GSL103": "note", "gsr201": "off",
                            "prune-delete": "error"}  # fmt: skip
    assert config.lint.severity == {"gsl104": "off"}
    overrides = rule_overrides(config.rules, {"lint": config.lint})
    # The environment's key comes after the file's for the same rule id: it wins.
    assert overrides["GSR201"] is None
    assert overrides["GSL104"] is None


def test_a_bad_rule_severity_in_the_environment_names_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"^environment GPUSHIP_RULES__GSR201: rules\.gsr201"):
        load_config(None, {"GPUSHIP_RULES__GSR201": "loud"})
