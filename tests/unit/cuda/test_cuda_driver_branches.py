"""Driver branches that drop GPU generations (NVIDIA's deprecation schedule, sourced in the
knowledge base): R580 is the last for Maxwell, Pascal and Volta, R470 the last for Kepler."""

from __future__ import annotations

import pytest

from gpuship.cuda.drivers import dropped_generation
from gpuship.cuda.knowledge import knowledge_base


@pytest.mark.parametrize(
    ("branch", "capability", "generation"),
    [
        (590, "7.0", "Volta"),
        (590, "6.1", "Pascal"),
        (590, "5.2", "Maxwell"),
        (495, "3.7", "Kepler"),
        (580, "7.0", None),  # the last branch that still runs it
        (610, "7.5", None),  # Turing: not dropped by any branch the knowledge base knows
        (470, "3.5", None),
    ],
)
def test_a_branch_after_a_generations_last_drops_it(
    branch: int, capability: str, generation: str | None
) -> None:
    row = dropped_generation(branch, capability)
    assert (row.generation if row else None) == generation


def test_every_row_names_its_source() -> None:
    rows = knowledge_base().driver_branches
    assert {row.generation for row in rows} == {"Kepler", "Maxwell", "Pascal", "Volta"}
    assert all("unix-graphics-feature-deprecation-schedule" in row.source for row in rows)
