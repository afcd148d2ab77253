"""The final filesystem with OCI whiteouts, and the corrected waste figure."""

from __future__ import annotations

from gpuship.image.layerscan import Entry
from gpuship.image.overlay import final_filesystem
from gpuship.image.tarwalk import DIRECTORY, REGULAR


def f(path: str, size: int) -> Entry:
    return Entry(path, REGULAR, size)


def visible(layers: list[list[Entry]]) -> dict[str, tuple[int, int]]:
    return {
        item.path: (item.size, item.layer)
        for item in final_filesystem(layers).files
        if item.kind == REGULAR
    }


def hidden(layers: list[list[Entry]]) -> list[tuple[str, int, int, int, str]]:
    return sorted(
        (h.path, h.size, h.added_in, h.hidden_in, h.how) for h in final_filesystem(layers).hidden
    )


def test_overwrite_keeps_the_upper_copy_and_wastes_the_lower() -> None:
    layers = [[f("a", 100), f("b", 50)], [f("a", 30)]]
    assert visible(layers) == {"a": (30, 1), "b": (50, 0)}
    assert hidden(layers) == [("a", 100, 0, 1, "overwritten")]
    assert final_filesystem(layers).hidden_bytes == 100  # dive says 130


def test_whiteout_deletes_a_file_and_a_whole_directory() -> None:
    layers = [
        [Entry("d", DIRECTORY, 0), f("d/x", 40), f("d/y", 60), f("keep", 1)],
        [f(".wh.d", 0)],
    ]
    assert visible(layers) == {"keep": (1, 0)}
    assert final_filesystem(layers).hidden_bytes == 100


def test_opaque_directory_hides_only_lower_children() -> None:
    layers = [[f("d/x", 10)], [f("d/.wh..wh..opq", 0), f("d/y", 5)]]
    assert visible(layers) == {"d/y": (5, 1)}
    assert hidden(layers) == [("d/x", 10, 0, 1, "deleted")]


def test_whiteout_never_hits_its_own_layer() -> None:
    layers = [[f("a", 1)], [f(".wh.a", 0), f("a", 2)]]
    assert visible(layers) == {"a": (2, 1)}
    assert hidden(layers) == [("a", 1, 0, 1, "deleted")]


def test_file_replaced_by_a_directory_is_hidden() -> None:
    layers = [[f("p", 7)], [f("p/q", 3)]]
    assert visible(layers) == {"p/q": (3, 1)}
    assert hidden(layers) == [("p", 7, 0, 1, "overwritten")]


def test_whiteout_of_missing_path_changes_nothing() -> None:
    layers = [[f("a", 1)], [f("x/.wh.nothing", 0)]]
    assert visible(layers) == {"a": (1, 0)}
    assert hidden(layers) == []
