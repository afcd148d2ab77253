"""Read `gpuship.yaml`, overlay `GPUSHIP_*` environment variables, validate once.

The root model is given (`config_catalog.load_config` gives the one with every stage's
section), so this package needs no stage.

Precedence, lowest first: model defaults < config file < environment < CLI flags/action inputs
(`config/options.py` resolves them, the flags last through `with_flags`). Every error names
where the bad value came from: `gpuship.yaml:12:3: lint.fail-on: ...`,
`environment GPUSHIP_FAIL_ON: ...` or `option verify.gpus: ...`.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from gpuship.config.locate import env_key_path
from gpuship.config.model import GpushipConfig
from gpuship.documents import compose_yaml, construct_yaml, read_file
from gpuship.errors import ConfigError, InputError
from gpuship.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    import yaml

ConfigPath = tuple[str | int, ...]


@dataclass(frozen=True)
class LoadedConfig:
    """A validated config, the file it came from (None when defaults only), and where each
    value came from, for a problem found after validation (a rule key that names no rule)."""

    config: GpushipConfig
    path: Path | None
    positions: Mapping[ConfigPath, tuple[int, int]] = field(default_factory=dict)
    sources: Mapping[ConfigPath, str] = field(default_factory=dict)

    def where(self, key_path: ConfigPath) -> str:
        """`gpuship.yaml:3:5`, `environment GPUSHIP_RULES__X`, else the file or `config`."""
        return _where(key_path, self.path, self.positions, self.sources)


def read_config(
    path: Path | None, environ: Mapping[str, str], model: type[GpushipConfig]
) -> LoadedConfig:
    """Validate defaults < file < environment into one `model`."""
    data: dict[str, Any] = {}
    positions: dict[ConfigPath, tuple[int, int]] = {}
    if path is not None:
        data, positions = _read_yaml(path, bootstrap_limits(environ))
    env_sources = _overlay_environment(data, environ, model)
    try:
        config = model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, model, path, positions, env_sources)) from None
    return LoadedConfig(config, path, positions, env_sources)


def with_flags(config: GpushipConfig, flags: Mapping[str, object]) -> GpushipConfig:
    """`config` with the values flags gave (`{"verify.gpus": 2}`; None: not given)."""
    if all(value is None for value in flags.values()):
        return config
    data = config.model_dump(by_alias=True)
    sources: dict[ConfigPath, str] = {}
    for dotted, value in flags.items():
        if value is None:
            continue
        key_path: ConfigPath = tuple(dotted.split("."))
        _set_path(data, key_path, value)
        sources[key_path] = f"option {dotted}"
    model = type(config)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, model, None, {}, sources)) from None


def bootstrap_limits(environ: Mapping[str, str]) -> Limits:
    """The limits on reading `gpuship.yaml` itself: defaults and `GPUSHIP_LIMITS__*` variables.

    They apply before the file's own `limits:` can be known; a malformed value is left to the
    full validation, which names it.
    """
    names = {field.name for field in dataclasses.fields(Limits)}
    values: dict[str, int] = {}
    for name, raw in environ.items():
        key_path = env_key_path(name)
        if key_path is None or len(key_path) != 2 or key_path[0] != "limits":
            continue
        field = key_path[1].replace("-", "_")
        if field in names and raw.strip().isdigit() and len(raw.strip()) < 20:
            values[field] = int(raw)
    return DEFAULT_LIMITS.override(**values)


def _read_yaml(
    path: Path, limits: Limits
) -> tuple[dict[str, Any], dict[ConfigPath, tuple[int, int]]]:
    try:
        text = read_file(path, "config file", limits, "yaml_max_bytes").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from None
    except InputError as exc:  # missing, not a regular file, or over yaml-max-bytes
        raise ConfigError(str(exc)) from None
    import yaml  # here: a command run without a config file starts without a YAML parser

    try:
        node = compose_yaml(text, str(path), limits)
        data = construct_yaml(node, str(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    except InputError as exc:  # past a limit, a key given twice
        raise ConfigError(str(exc)) from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1:1: the config file must be a mapping of sections")
    positions: dict[ConfigPath, tuple[int, int]] = {}
    _record_positions(node, (), positions)
    return data, positions


def _record_positions(
    node: yaml.Node | None, at: ConfigPath, out: dict[ConfigPath, tuple[int, int]]
) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*at, str(key_node.value))
            out[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            _record_positions(value_node, child, out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*at, index)
            out[child] = (item.start_mark.line + 1, item.start_mark.column + 1)
            _record_positions(item, child, out)


def _overlay_environment(
    data: dict[str, Any], environ: Mapping[str, str], model: type[GpushipConfig]
) -> dict[ConfigPath, str]:
    """Set values from `GPUSHIP_*` variables that name a config field; return their sources.

    Variables that name no field are left alone: the prefix is shared with settings that are
    not config (`GPUSHIP_REGISTRY_USER`, the action's own `GPUSHIP_PYTHON`).
    """
    sources: dict[ConfigPath, str] = {}
    for name in sorted(environ):
        key_path = env_key_path(name)
        if key_path is None or not _is_field_path(model, key_path):
            continue
        _set_path(data, key_path, _parse_env_value(environ[name], f"environment {name}"))
        sources[key_path] = f"environment {name}"
    return sources


def _parse_env_value(raw: str, where: str) -> object:
    # YAML scalars give env values the same meaning they have in the file: true, 3, [a, b].
    import yaml

    # Environment values are bounded like the file (an alias bomb fits in one variable).
    try:
        return (
            construct_yaml(compose_yaml(raw, where, DEFAULT_LIMITS), where) if raw.strip() else raw
        )
    except yaml.YAMLError:
        return raw
    except InputError as exc:
        raise ConfigError(str(exc)) from None


def _set_path(data: dict[str, Any], key_path: ConfigPath, value: object) -> None:
    target = data
    for key in key_path[:-1]:
        child = target.get(str(key))
        if not isinstance(child, dict):
            child = {}
            target[str(key)] = child
        target = child
    target[str(key_path[-1])] = value


def _field_models(annotation: object) -> list[type]:
    """The pydantic models and dataclasses an annotation can hold (through Optional, list)."""
    if isinstance(annotation, type) and (
        issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation)
    ):
        return [annotation]
    found: list[type] = []
    if typing.get_origin(annotation) is not None or isinstance(annotation, types.UnionType):
        for arg in typing.get_args(annotation):
            found.extend(_field_models(arg))
    return found


def _model_fields_by_alias(model: type) -> dict[str, object]:
    if dataclasses.is_dataclass(model):  # `limits:` (kebab-case like every section)
        return {field.name.replace("_", "-"): field.type for field in dataclasses.fields(model)}
    assert issubclass(model, BaseModel)
    return {(info.alias or name): info.annotation for name, info in model.model_fields.items()}


def _is_field_path(model: type, key_path: ConfigPath) -> bool:
    """Whether `key_path` names a field, or one key of a mapping field (`GPUSHIP_RULES__GSL103`
    sets `rules: {gsl103: ...}`; rule keys are matched without regard to case)."""
    fields = _model_fields_by_alias(model)
    head = str(key_path[0])
    if head not in fields:
        return False
    if len(key_path) == 1:
        return True
    if len(key_path) == 2 and typing.get_origin(fields[head]) in (dict, Mapping):
        return True
    return any(_is_field_path(sub, key_path[1:]) for sub in _field_models(fields[head]))


def _allowed_keys(root: type[GpushipConfig], key_path: ConfigPath) -> list[str]:
    """Keys valid next to the last element of `key_path` (for "did you mean")."""
    models: list[type] = [root]
    for key in key_path[:-1]:
        if isinstance(key, int):
            continue
        next_models: list[type] = []
        for model in models:
            annotation = _model_fields_by_alias(model).get(key)
            next_models.extend(_field_models(annotation))
        models = next_models
    return sorted({alias for model in models for alias in _model_fields_by_alias(model)})


def _describe(
    exc: ValidationError,
    model: type[GpushipConfig],
    path: Path | None,
    positions: Mapping[ConfigPath, tuple[int, int]],
    sources: Mapping[ConfigPath, str],
) -> str:
    errors = exc.errors()
    first = errors[0]
    loc: ConfigPath = tuple(first["loc"])
    dotted = ".".join(str(part) for part in loc) or "(top level)"
    # A stdlib dataclass section (`limits:`) reports an unknown key as an unexpected argument.
    if first["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        message = f"unknown key '{loc[-1]}'"
        hint = difflib.get_close_matches(str(loc[-1]), _allowed_keys(model, loc), n=1)
        if hint:
            message += f" (did you mean '{hint[0]}'?)"
    else:
        message = first["msg"]
    where = _where(loc, path, positions, sources)
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{where}: {dotted}: {message}{more}"


def _where(
    loc: ConfigPath,
    path: Path | None,
    positions: Mapping[ConfigPath, tuple[int, int]],
    sources: Mapping[ConfigPath, str],
) -> str:
    for depth in range(len(loc), 0, -1):
        prefix = loc[:depth]
        if prefix in sources:
            return sources[prefix]
        if prefix in positions and path is not None:
            line, column = positions[prefix]
            return f"{path}:{line}:{column}"
    return str(path) if path is not None else "config"
