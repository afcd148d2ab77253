"""The root config model is assembled from the sections the stages declare, and misses none.

`config/` imports no stage (the layers contract holds that; tests/unit/core/test_layers.py
checks it can fail); `cli/config_catalog` names the key of each stage's section. A section model
that no key reaches would have its keys refused as unknown: these tests catch that first.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

import gpuship
from gpuship.cli.config_catalog import SECTIONS, config_model, config_schema, load_config
from gpuship.compat.config import VerifyConfig
from gpuship.config.model import GpushipConfig, root_model
from gpuship.config.section import Section, StageSection
from gpuship.limits import Limits
from gpuship.matrix.config import ImageConfig

SRC = Path(gpuship.__file__).parent


def _stage_config_modules() -> list[str]:
    """`gpuship.<package>.config` for every package but config/ itself that has one."""
    return [
        f"gpuship.{info.name}.config"
        for info in pkgutil.iter_modules(gpuship.__path__)
        if info.ispkg and info.name != "config" and (SRC / info.name / "config.py").is_file()
    ]


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def _reachable(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    seen.add(model)
    for info in model.model_fields.values():
        for child in _models_in(info.annotation):
            if child not in seen:
                _reachable(child, seen)
    return seen


def test_every_section_a_stage_defines_is_reachable_from_the_root() -> None:
    modules = _stage_config_modules()
    assert len(modules) >= 7  # compat (verify:), image, lint, matrix, probe, release, route
    defined = {
        cls
        for name in modules
        for cls in vars(importlib.import_module(name)).values()
        if inspect.isclass(cls) and issubclass(cls, Section) and cls.__module__ == name
    }
    missing = defined - _reachable(config_model(), set())
    assert not missing, f"section models no gpuship.yaml key holds: {sorted(map(str, missing))}"


def test_every_stage_section_is_in_the_schema_under_its_key() -> None:
    schema = config_schema()
    properties = typing.cast(dict[str, dict[str, object]], schema["properties"])
    for section in SECTIONS:
        model = _models_in(section.model)[0]
        assert model.__name__ in str(properties[section.key]), section.key
    assert list(properties)[-1] == "limits"


def test_section_gives_each_stage_its_validated_model(tmp_path: Path) -> None:
    path = tmp_path / "gpuship.yaml"
    path.write_text("verify:\n  gpus: 2\nimages:\n  - name: a\n    repository: r/a\n")
    config = load_config(path, {}).config
    verify = config.section(VerifyConfig)
    assert isinstance(verify, VerifyConfig) and verify.gpus == 2
    (image,) = config.section(list[ImageConfig])
    assert isinstance(image, ImageConfig) and image.name == "a"
    assert config.section(Limits) == Limits()
    with pytest.raises(LookupError):
        config.section(StageSection)


@pytest.mark.parametrize(
    "sections",
    [
        (StageSection("verify", VerifyConfig), StageSection("verify", ImageConfig)),
        (StageSection("verify", VerifyConfig), StageSection("other", VerifyConfig)),
        (StageSection("rules", VerifyConfig),),
        (StageSection("fail-on", VerifyConfig),),
        (StageSection("limits", VerifyConfig),),
    ],
)
def test_two_sections_cannot_share_a_key_or_a_model(sections: tuple[StageSection[object]]) -> None:
    with pytest.raises(ValueError, match="distinct keys and types"):
        root_model(sections)


def test_the_root_model_is_a_gpushipconfig() -> None:
    assert issubclass(config_model(), GpushipConfig)
    assert config_model() is config_model()  # assembled once
