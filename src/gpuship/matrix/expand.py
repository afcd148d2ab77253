"""Axes x exclude x include -> combinations, with GitHub Actions `strategy.matrix` semantics.

Rules (docs.github.com "Running variations of jobs in a workflow", source text in
github/docs `data/reusables/actions/jobs/matrix-include.md` and `matrix-exclude.md`):

- The product of the axes is taken in declaration order (first axis varies slowest).
- `exclude` runs first; an entry removes every combination it matches partially (all of its
  keys equal). Its keys must be axes.
- Each `include` entry is merged into every *original* combination whose axis values it does
  not overwrite (keys that are not axes may be overwritten, also by a later entry); when it
  fits no original combination it becomes a new combination of its own. Combinations added
  this way are never extended by later entries.
- With no axes, each `include` entry is one combination.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


class ExpansionError(ValueError):
    """The axes or include/exclude entries are inconsistent; the message says how."""


@dataclass(frozen=True)
class Combination:
    """One matrix combination: its values and whether an include entry created it."""

    values: Mapping[str, str]
    from_include: bool = False


def combination_count(axes: Mapping[str, Sequence[object]], include: Sequence[object] = ()) -> int:
    """The most combinations `expand` can make (before excludes), without expanding anything:
    the product of the axis lengths plus one per include entry."""
    return (math.prod(len(values) for values in axes.values()) if axes else 0) + len(include)


def expand(
    axes: Mapping[str, Sequence[str]],
    include: Sequence[Mapping[str, str]] = (),
    exclude: Sequence[Mapping[str, str]] = (),
    max_combinations: int | None = None,
) -> list[Combination]:
    """All combinations, originals first (product order) then include-created ones.

    With `max_combinations`, axes that could make more are refused before any is made (six
    axes of ten values are a million combinations in a few lines of YAML).
    """
    count = combination_count(axes, include)
    if max_combinations is not None and count > max_combinations:
        raise ExpansionError(
            f"the axes and include entries make up to {count} combinations, more than "
            f"limits.matrix-max-cells ({max_combinations})"
        )
    for axis, values in axes.items():
        if not values:
            raise ExpansionError(f"axis '{axis}' has no values")
    for index, entry in enumerate(exclude):
        unknown = sorted(set(entry) - set(axes))
        if unknown:
            raise ExpansionError(
                f"exclude[{index}] key '{unknown[0]}' is not an axis (axes: {', '.join(axes)})"
            )
        if not entry:
            raise ExpansionError(f"exclude[{index}] is empty and would exclude everything")
    names = list(axes)
    originals = [
        dict(zip(names, product, strict=True))
        for product in itertools.product(*(axes[name] for name in names))
    ]
    if not names:
        originals = []
    kept = [combo for combo in originals if not any(_matches(combo, e) for e in exclude)]
    merged = [dict(combo) for combo in kept]
    added: list[dict[str, str]] = []
    for entry in include:
        fitted = False
        for original, target in zip(kept, merged, strict=True):
            if all(original[key] == value for key, value in entry.items() if key in original):
                target.update(entry)
                fitted = True
        if not fitted:
            added.append(dict(entry))
    return [Combination(values=combo) for combo in merged] + [
        Combination(values=combo, from_include=True) for combo in added
    ]


def _matches(combo: Mapping[str, str], entry: Mapping[str, str]) -> bool:
    return all(combo.get(key) == value for key, value in entry.items())
