"""`route --matrix`: each cell routes by its planned needs (its min-driver included) and names
the image a GPU job pulls by tag or digest, never by a bare repository."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from gpuship.compat.cell import matrix_cells
from gpuship.compat.config import VerifyConfig
from gpuship.errors import InputError
from gpuship.route.config import RouteConfig
from gpuship.route.kubernetes import node_selector_terms
from gpuship.route.routing import fleet_hosts, route_images
from gpuship.route.run import cell_images
from unit.compat.compat_builders import H100, audit, gpu

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def cell(**extra: Any) -> dict[str, Any]:
    return {
        "id": "trainer-cuda12.4",
        "image": "trainer",
        "cuda": "12.4",
        "min_driver": "550.54.14",
        "arch_list": "9.0",
        "repository": "registry.example/ml/trainer",
        "tags": ["registry.example/ml/trainer:cu124"],
        "platforms": ["linux/amd64"],
        **extra,
    }


def references(*cells: dict[str, Any]) -> dict[str, str]:
    return cell_images(matrix_cells({"include": list(cells)}, "matrix.json"), "matrix.json")[1]


def test_a_cell_is_pulled_by_its_first_tag_as_gpuship_matrix_writes_it() -> None:
    assert references(cell()) == {"trainer-cuda12.4": "registry.example/ml/trainer:cu124"}


def test_a_bare_tag_joins_the_repository_and_a_digest_is_used_without_tags() -> None:
    digest = "sha256:" + "ab" * 32
    assert references(cell(tags=["cu124"])) == {
        "trainer-cuda12.4": "registry.example/ml/trainer:cu124"
    }
    assert references(cell(tags=[], digest=digest)) == {
        "trainer-cuda12.4": f"registry.example/ml/trainer@{digest}"
    }


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tags": []}, r"matrix\.json: cell trainer-cuda12\.4 has no tag or digest"),
        ({"tags": [], "repository": None}, r"matrix\.json: include\[0\]\.repository: "),
        ({"tags": ["Bad Tag!"]}, r"matrix\.json: cell trainer-cuda12\.4: "),
    ],
)
def test_a_cell_without_a_tag_or_digest_is_an_input_error(
    changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        references(cell(**changes))


def test_a_cells_raised_min_driver_is_enforced_by_route_and_the_affinity() -> None:
    # The cell needs 570.86.10 (a library of its own), above the 12.4 GA driver.
    raised = cell(min_driver="570.86.10")
    images, _ = cell_images(matrix_cells({"include": [raised]}, "m"), "m")
    pools = [(audit(550, [gpu(**H100)], labels=["h100-550"]), NOW)]
    pools += [(audit(570, [gpu(**H100)], labels=["h100-570"]), NOW)]
    hosts = fleet_hosts(pools, NOW + timedelta(minutes=1), timedelta(hours=1))
    routed = route_images(hosts, images, VerifyConfig(), RouteConfig())
    assert routed.routes[0].runnable_pools == ("h100-570",)
    assert "the minimum the image states" in routed.routes[0].pools[0].reason()
    terms = node_selector_terms(images[0].needs, VerifyConfig())
    floors = [
        r for term in terms for r in term if r["key"] == "nvidia.com/cuda.driver-version.major"
    ]
    assert {"key": "nvidia.com/cuda.driver-version.major", "operator": "Gt", "values": ["570"]} in (
        floors
    )
    assert not any(r["operator"] == "Gt" and int(r["values"][0]) < 569 for r in floors)
