"""dive's figures on synthetic layer trees; expected values worked out by hand from dive's rules
(efficiency.go: leaves only, whiteouts sized from the stacked lower tree, dirs only)."""

from __future__ import annotations

import pytest

from gpuship.image.dive import dive_figures
from gpuship.image.layerscan import Entry
from gpuship.image.tarwalk import DIRECTORY, REGULAR


def f(path: str, size: int) -> Entry:
    return Entry(path, REGULAR, size)


def d(path: str) -> Entry:
    return Entry(path, DIRECTORY, 0)


def test_overwritten_file_counts_every_copy_as_wasted() -> None:
    figures = dive_figures([[f("a", 100), f("b", 50)], [f("a", 30)]])
    # /a: 100 + 30 cumulative, min 30; /b: 50.  (30 + 50) / (130 + 50)
    assert figures.efficiency == pytest.approx(80 / 180)
    assert figures.wasted_bytes == 130  # dive #684: the kept copy is counted too
    assert figures.layer_sizes == (150, 30)
    assert figures.user_size_bytes == 30
    assert figures.user_wasted_percent == pytest.approx(130 / 30)
    assert [(i.path, i.count, i.cumulative_size) for i in figures.inefficiencies] == [
        ("/a", 2, 130)
    ]


def test_deleted_file_adds_zero_and_drags_the_minimum_down() -> None:
    figures = dive_figures([[d("d"), f("d/f", 100)], [f("d/.wh.f", 0)]])
    assert figures.efficiency == 0.0  # min 0 / cumulative 100
    assert figures.wasted_bytes == 100
    assert figures.user_size_bytes == 0
    assert figures.user_wasted_percent is None  # dive would divide by zero


def test_deleted_directory_is_sized_from_its_subtree_and_not_seen_twice() -> None:
    figures = dive_figures([[d("d"), f("d/x", 40), f("d/y", 60)], [f(".wh.d", 0)]])
    # /d appears once (layer 0's /d is not a leaf) with the subtree's 100 bytes.
    assert figures.efficiency == 1.0
    assert figures.wasted_bytes == 0


def test_deleted_implicit_directory_counts_zero() -> None:
    # dive's FileInfo.IsDir comes from the tar header; an implied parent is not a directory.
    figures = dive_figures([[f("d/x", 40)], [f(".wh.d", 0)]])
    assert figures.efficiency == 1.0
    assert figures.wasted_bytes == 0


def test_whiteout_of_an_unknown_path_stops_that_layer_and_leaves_minus_one() -> None:
    figures = dive_figures([[f("a", 10)], [f(".wh.nothing", 0), f("b", 5)]])
    # ".wh.nothing" sorts before "b": the lookup fails, "b" is never visited, and the
    # record for /nothing keeps minDiscoveredSize = -1: (10 - 1) / 10.
    assert figures.efficiency == pytest.approx(0.9)
    assert figures.wasted_bytes == 0
    assert figures.layer_sizes == (10, 5)


def test_opaque_markers_never_enter_the_tree() -> None:
    figures = dive_figures([[f("d/x", 10)], [f("d/.wh..wh..opq", 0), f("d/y", 5)]])
    assert figures.efficiency == 1.0
    assert figures.wasted_bytes == 0


def test_three_copies_count_once_as_an_inefficiency() -> None:
    figures = dive_figures([[f("a", 10)], [f("a", 20)], [f("a", 30)]])
    assert figures.efficiency == pytest.approx(10 / 60)
    assert figures.wasted_bytes == 60
    assert figures.inefficiencies[0].count == 3


def test_empty_image_is_fully_efficient() -> None:
    figures = dive_figures([])
    assert figures.efficiency == 1.0
    assert figures.wasted_bytes == 0
    assert figures.user_wasted_percent is None
