"""One resolver for every option: flags > environment > file > defaults, each bad value
named by where it came from, and nothing validated when nothing is configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuship.cli.config_catalog import config_model
from gpuship.cli.stages import section_keys
from gpuship.compat.config import VerifyConfig
from gpuship.config.locate import SHARED_KEYS
from gpuship.config.model import GpushipConfig
from gpuship.config.options import Flags, Options
from gpuship.errors import ConfigError

KEYS = SHARED_KEYS | section_keys()


def options(path: Path | None, environ: dict[str, str], flags: Flags) -> Options:
    return Options(path, environ, flags, KEYS, config_model)


def no_model() -> type[GpushipConfig]:
    raise AssertionError("the models were built with nothing to validate")


@pytest.mark.parametrize(
    ("file", "environ", "flags", "gpus"),
    [
        (None, {}, {}, 1),  # the default
        ("verify:\n  gpus: 2\n", {}, {}, 2),
        ("verify:\n  gpus: 2\n", {"GPUSHIP_VERIFY__GPUS": "3"}, {}, 3),
        ("verify:\n  gpus: 2\n", {"GPUSHIP_VERIFY__GPUS": "3"}, {"verify.gpus": 4}, 4),
        ("verify:\n  gpus: 2\n", {"GPUSHIP_VERIFY__GPUS": "3"}, {"verify.gpus": None}, 3),
        (None, {}, {"verify.gpus": 4}, 4),
    ],
)
def test_flags_beat_the_environment_which_beats_the_file(
    tmp_path: Path, file: str | None, environ: dict[str, str], flags: Flags, gpus: int
) -> None:
    path = None
    if file is not None:
        path = tmp_path / "gpuship.yaml"
        path.write_text(file)
    resolved = options(path, environ, flags)
    assert resolved.config.section(VerifyConfig).gpus == gpus
    assert VerifyConfig().gpus == 1  # the default the first case reads


def test_the_file_and_environment_are_validated_without_the_flags(tmp_path: Path) -> None:
    path = tmp_path / "gpuship.yaml"
    path.write_text("fail-on: note\n")
    resolved = options(path, {}, {"fail-on": "never"})
    assert resolved.loaded.config.fail_on == "note"
    assert resolved.config.fail_on == "never"
    assert resolved.value("fail-on", "error") == "never"


def test_a_bad_flag_value_names_the_option() -> None:
    resolved = options(None, {"GPUSHIP_FAIL_ON": "note"}, {"verify.gpus": -1})
    assert resolved.loaded.config.fail_on == "note"
    with pytest.raises(ConfigError, match=r"^option verify\.gpus: verify\.gpus: "):
        _ = resolved.config


def test_nothing_configured_answers_shared_keys_without_the_models() -> None:
    resolved = Options(None, {"GPUSHIP_PYTHON": "python3"}, {"deadline": 7.5}, KEYS, no_model)
    assert not resolved.has_input
    assert resolved.value("deadline", 600.0) == 7.5
    assert resolved.value("fail-on", "error") == "error"
    configured = Options(None, {"GPUSHIP_DEADLINE": "9"}, {}, KEYS, config_model)
    assert configured.has_input and configured.value("deadline", 600.0) == 9.0
