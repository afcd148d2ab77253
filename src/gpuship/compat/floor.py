"""The driver floor a fleet agrees on: the lowest driver every host (of a pool) keeps.

`verify.driver-floor` in gpuship.yaml holds it, fleet-wide (`default`) and per pool (a runner
label, `pools`). `matrix` refuses a cell no floor can run, `fleet`, `route` and `verify` name
the hosts below their floor, and `build` stamps the fleet-wide floor into the image's labels.
A pool with no floor of its own takes `default`; with neither, its floor is unknown and
nothing is judged against it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import Field, field_validator

from gpuship.config.section import Section
from gpuship.cuda.errors import InvalidVersion
from gpuship.cuda.version import Version


def _driver(text: str) -> str:
    try:
        Version.parse(text, "driver version")
    except InvalidVersion as error:
        raise ValueError(f"{error} (a driver version such as 570.86.10)") from None
    return text


class DriverFloor(Section):
    """The lowest driver the fleet, and each pool, agrees to keep."""

    default: str | None = Field(
        default=None,
        description="Driver every GPU runner keeps at least (e.g. 570.86.10); empty: no "
        "fleet-wide floor.",
    )
    pools: dict[str, str] = Field(
        default_factory=dict,
        description="Runner label (pool) -> the driver its hosts keep at least; a pool not "
        "listed takes `default`.",
    )

    @field_validator("default")
    @classmethod
    def _valid_default(cls, value: str | None) -> str | None:
        return None if value is None else _driver(value)

    @field_validator("pools")
    @classmethod
    def _valid_pools(cls, value: dict[str, str]) -> dict[str, str]:
        for pool, driver in value.items():
            try:
                _driver(driver)
            except ValueError as error:
                raise ValueError(f"pool {pool}: {error}") from None
        return value

    @property
    def configured(self) -> bool:
        return self.default is not None or bool(self.pools)


@dataclass(frozen=True)
class Floor:
    """One floor and where it comes from: a pool's label, or the fleet (`pool` None)."""

    driver: Version
    pool: str | None

    @property
    def where(self) -> str:
        return f"pool {self.pool}" if self.pool else "the fleet"


def pool_floor(floors: DriverFloor, pool: str) -> Floor | None:
    """The floor of one pool: its own, else the fleet's; None when neither is set."""
    if pool in floors.pools:
        return Floor(Version.parse(floors.pools[pool]), pool)
    if floors.default is not None:
        return Floor(Version.parse(floors.default), None)
    return None


def host_floor(floors: DriverFloor, labels: Iterable[str]) -> Floor | None:
    """The floor a host with these labels must keep: the highest of its pools' floors (it is in
    each of those pools), else the fleet's; None when no floor applies."""
    own = [
        Floor(Version.parse(floors.pools[label]), label)
        for label in labels
        if label in floors.pools
    ]
    if own:
        return max(own, key=lambda floor: floor.driver)
    if floors.default is not None:
        return Floor(Version.parse(floors.default), None)
    return None


def highest_floor(floors: DriverFloor) -> Floor | None:
    """The highest floor any pool keeps: a need above it is guaranteed nowhere."""
    every = [Floor(Version.parse(driver), pool) for pool, driver in floors.pools.items()]
    if floors.default is not None:
        every.append(Floor(Version.parse(floors.default), None))
    return max(every, key=lambda floor: floor.driver) if every else None
