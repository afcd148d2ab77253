"""`gpuship fleet plan`'s result: the published shape of its `--format json` document
(`gpuship schema --result fleet` gives the JSON Schema of it and of the fleet grid)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlanCell:
    """One image on one pool before and after the change: ok, warn, fail, unknown (no host to
    judge) or absent (the image exists only after the change), and why."""

    image: str
    pool: str
    before: str
    before_why: str
    after: str
    after_why: str


@dataclass(frozen=True)
class DroppedGeneration:
    """GPUs of a pool that the pool's new driver branch no longer supports (knowledge base)."""

    pool: str
    driver: str
    generation: str
    hosts: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class RolloutStep:
    """One step of the rollout, in order, and the command that checks it."""

    step: int
    action: str
    hosts: tuple[str, ...]
    check: str


@dataclass(frozen=True)
class FleetPlanResult:
    """What the change does: every image x pool before and after, what is lost, the rollout."""

    changes: tuple[str, ...]
    pools: tuple[str, ...]
    images: tuple[str, ...]
    cells: tuple[PlanCell, ...]
    images_losing_every_host: tuple[str, ...]
    lowest_driver_running_everything: str | None  # natively, after the change; null: unknown
    driver_unknown_for: tuple[str, ...]
    dropped_generations: tuple[DroppedGeneration, ...]
    rollout: tuple[RolloutStep, ...]
