"""Which value each option takes: the one resolver every command reads its config through
(as cibuildwheel's `options.py` is for its options).

Precedence, highest first:

1. flags: the global ones (`--fail-on`, `--deadline`) and those a command declares in its
   `CONFIG_FLAGS` (`verify --gpus` sets `verify.gpus`); the actions pass their inputs as flags;
2. `GPUSHIP_*` environment variables (`GPUSHIP_VERIFY__GPUS`: `__` separates sections);
3. the config file (`--config PATH`, else `./gpuship.yaml`);
4. the defaults of the models.

A value that fails validation is one error naming where it came from: `gpuship.yaml:12:3`,
`environment GPUSHIP_VERIFY__GPUS` or `option verify.gpus`. The file and the environment are
validated together (`loaded`: the CLI does so before the command runs); flags on top of them
when the command first reads `config`. With no file and no config variable there is nothing
to validate: `value` then answers a shared key from its flag or its default without building
the models (or importing pydantic), which is how `gpuship lint` starts fast.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from gpuship.config.locate import has_config_input

if TYPE_CHECKING:
    from gpuship.config.load import LoadedConfig
    from gpuship.config.model import GpushipConfig

T = TypeVar("T")
# Config key (dotted for nested keys: `verify.gpus`) -> the value a flag gave; None: not given.
Flags = Mapping[str, object]


class Options:
    """Every option of one run: the config file (None: there is none), the environment, the
    flags, gpuship.yaml's top-level keys and the root model (built on first use).

    A plain class, not a dataclass: every command builds one at start, and `@dataclass`
    compiles its methods when the module is imported (~2M instructions, a third of a percent
    of `gpuship lint` on one file).
    """

    def __init__(
        self,
        path: Path | None,
        environ: Mapping[str, str],
        flags: Flags,
        top_level_keys: frozenset[str],
        model: Callable[[], type[GpushipConfig]],
    ) -> None:
        self.path = path
        self.environ = environ
        self.flags = flags
        self.top_level_keys = top_level_keys
        self.model = model

    @functools.cached_property
    def has_input(self) -> bool:
        """Whether the file or a `GPUSHIP_*` variable may change any default."""
        return has_config_input(self.path, self.environ, self.top_level_keys)

    @functools.cached_property
    def loaded(self) -> LoadedConfig:
        """Defaults < file < environment, validated, with where each value came from."""
        from gpuship.config.load import read_config

        return read_config(self.path, self.environ, self.model())

    @functools.cached_property
    def config(self) -> GpushipConfig:
        """Every option resolved: defaults < file < environment < flags."""
        from gpuship.config.load import with_flags

        return with_flags(self.loaded.config, self.flags)

    def value(self, key: str, default: T) -> T:
        """A top-level key every command shares (`fail-on`, `deadline`) as resolved, read
        without validating anything when nothing is configured: its flag, else `default`."""
        if self.has_input:
            resolved: T = getattr(self.config, key.replace("-", "_"))
            return resolved
        flag = self.flags.get(key)
        # A flag's value is of its key's type: argparse checked it (`choices`, `type`).
        return default if flag is None else cast(T, flag)
