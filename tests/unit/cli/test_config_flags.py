"""The flags a command declares in `CONFIG_FLAGS` reach the config through the one resolver:
over the environment and the file, for the commands that declare them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gpuship.cli.main import main
from gpuship.cli.registry import load_command

AUDIT = Path(__file__).resolve().parents[2] / "data/gpu-readings/NVIDIA-H200-580.159.04.audit.json"


def gpus_check(tmp_path: Path, environ: dict[str, str], *flags: str) -> str:
    (tmp_path / "gpuship.yaml").write_text("verify:\n  gpus: 5\n")
    out = io.StringIO()
    argv = ["--config", str(tmp_path / "gpuship.yaml"), "--format", "json"]
    main([*argv, "verify", "--audit", str(AUDIT), *flags], environ, out, io.StringIO())
    checks = json.loads(out.getvalue())["result"]["checks"]
    (gpus,) = [check["message"] for check in checks if check["rule"] == "GSV102"]
    return str(gpus)


def test_a_command_flag_beats_the_environment_and_the_file(tmp_path: Path) -> None:
    assert gpus_check(tmp_path, {}).startswith("the job needs 5 GPU(s)")
    assert gpus_check(tmp_path, {"GPUSHIP_VERIFY__GPUS": "3"}).startswith("the job needs 3")
    assert gpus_check(tmp_path, {"GPUSHIP_VERIFY__GPUS": "3"}, "--gpus", "0") == (
        "1 usable GPU, 0 needed"
    )


@pytest.mark.parametrize("command", ["verify", "route", "probe"])
def test_each_config_flag_names_a_key_of_the_config(command: str) -> None:
    from gpuship.cli.config_catalog import config_model

    for key in load_command(command).CONFIG_FLAGS.values():  # type: ignore[attr-defined]
        model: object = config_model()
        for part in key.split("."):
            fields = getattr(model, "model_fields", {})
            by_alias = {info.alias or name: info for name, info in fields.items()}
            assert part in by_alias, key
            model = by_alias[part].annotation
