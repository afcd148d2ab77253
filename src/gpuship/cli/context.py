"""What every command receives besides its own arguments."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpuship.cli.stages import rule_switches, section_keys
from gpuship.config.locate import (
    DEFAULT_DEADLINE_S,
    DEFAULT_FAIL_ON,
    SHARED_KEYS,
)
from gpuship.config.options import Flags, Options
from gpuship.errors import ConfigError
from gpuship.limits import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from gpuship.config.model import GpushipConfig
    from gpuship.registry.access import RegistryAccess
    from gpuship.registry.client import RegistryClient
    from gpuship.registry.deadline import Deadline
    from gpuship.registry.retry import RetryPolicy
    from gpuship.report.catalog import Overrides


@dataclass(frozen=True)
class Context:
    """Where config comes from, the flags that set config keys, and the process environment.

    Every option is resolved by `config.options.Options` (flags > environment > file >
    defaults). With no file and no `GPUSHIP_*` config variable there is nothing to validate:
    the config is then built only if a command asks for it, so one that needs only defaults
    (`gpuship lint` with no gpuship.yaml) never loads pydantic, about 0.1 s of start-up.
    """

    config_path: Path | None
    environ: Mapping[str, str]
    # Config key -> the value its flag gave (None: not given): `--fail-on`, `--deadline` and
    # the command's `CONFIG_FLAGS` (`verify --gpus`: `verify.gpus`).
    flags: Flags = field(default_factory=dict)
    # When the command started: its deadline counts from here.
    started: float = field(default_factory=time.monotonic)
    # A command that changes a registry calls this as soon as that work is done: from then on
    # a signal does not stop it, so its report and step outputs say what the registry holds
    # (the CLI's one signal handler, `cli/main.py`, decides; a plain Context does nothing).
    registry_work_done: Callable[[], None] = field(default=lambda: None)

    @functools.cached_property
    def options(self) -> Options:
        """The one resolver of this run's options."""
        keys = SHARED_KEYS | section_keys()
        return Options(self.config_path, self.environ, self.flags, keys, _config_model)

    @property
    def config(self) -> GpushipConfig:
        """The validated config: defaults < file < environment < flags."""
        return self.options.config

    def validate_config(self) -> None:
        """Validate now if there is anything to validate, so a broken file stops every command
        before it runs, as it would if the config were read eagerly."""
        if self.has_config_input:
            _ = self.rule_overrides

    @functools.cached_property
    def rule_overrides(self) -> Overrides:
        """The severities gpuship.yaml sets for rules (`rules:`, and the sections that switch
        their stage's rules: `lint:`); none without config. No flag sets one: they are read
        from the file and the environment, validated before any flag is applied."""
        if not self.has_config_input:
            return {}
        from gpuship.cli.config_catalog import section_of

        loaded = self.options.loaded
        switches = {key: section_of(loaded.config, key) for key in rule_switches()}
        switched = any(s.enable or s.disable or s.severity for s in switches.values())
        if not (loaded.config.rules or switched):
            return {}  # nothing overridden: no need to load every stage's catalog
        from gpuship.cli.rules_catalog import rule_overrides
        from gpuship.report.catalog import RuleKeyError

        try:
            return rule_overrides(loaded.config.rules, switches)
        except RuleKeyError as error:  # name the line, or the variable, that set the key
            raise ConfigError(f"{loaded.where(error.path)}: {error}") from None

    @property
    def has_config_input(self) -> bool:
        """Whether the file or a `GPUSHIP_*` variable may change any default."""
        return self.options.has_input

    @property
    def limits(self) -> Limits:
        """The `limits:` in force (the defaults when nothing configures any)."""
        return self.config.section(Limits) if self.has_config_input else DEFAULT_LIMITS

    @property
    def fail_on(self) -> str:
        """The lowest severity that fails the command (`never` for none)."""
        return self.options.value("fail-on", DEFAULT_FAIL_ON)

    def registry_access(self) -> RegistryAccess:
        """How this command reaches registries: `registries:`, its deadline, `limits:`, its
        environment. Every stage that talks to a registry is given this one value."""
        from gpuship.registry.access import RegistryAccess

        return RegistryAccess(
            insecure=tuple(self.config.registries.insecure),
            environ=self.environ,
            retry=self.retry_policy,
            deadline=self.deadline,
            limits=self.limits,
        )

    def registry_client(self) -> RegistryClient:
        """A registry client honouring `registry_access()`."""
        return self.registry_access().client()

    def config_digest(self) -> str:
        """sha256 of the config file used (of the effective config when there is no file):
        release records name the policy they were made under."""
        import hashlib  # only release commands ask; others start without it

        if self.config_path is not None and self.config_path.is_file():
            data = self.config_path.read_bytes()
        else:
            dumped = self.config.model_dump(mode="json", by_alias=True)
            data = json.dumps(dumped, sort_keys=True, separators=(",", ":")).encode()
        return "sha256:" + hashlib.sha256(data).hexdigest()

    @functools.cached_property
    def deadline(self) -> Deadline:
        """The command's deadline, counted from its start: `--deadline`, else
        `GPUSHIP_DEADLINE` or `deadline:` in gpuship.yaml, else 600 s."""
        from gpuship.registry.deadline import Deadline

        return Deadline(self.options.value("deadline", DEFAULT_DEADLINE_S), start=self.started)

    @property
    def retry_policy(self) -> RetryPolicy:
        """Per-request timeout and retries for registries, from `registries:`."""
        from gpuship.registry.retry import RetryPolicy

        if not self.has_config_input:
            return RetryPolicy()
        registries = self.config.registries
        return RetryPolicy(
            attempts=registries.attempts,
            backoff_s=registries.backoff,
            timeout_s=registries.request_timeout,
        )


def _config_model() -> type[GpushipConfig]:
    from gpuship.cli.config_catalog import config_model  # pydantic, every stage's section

    return config_model()
