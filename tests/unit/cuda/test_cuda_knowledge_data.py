"""The packaged data file: valid, sourced, free of duplicates and internally consistent."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from gpuship.cuda.arch import parse_arch_list
from gpuship.cuda.drivers import known_cuda_releases
from gpuship.cuda.knowledge import KnowledgeBaseError, knowledge_base, parse_knowledge_base
from gpuship.cuda.toolkits import can_compile
from gpuship.cuda.torch import cuda_of_variant
from gpuship.cuda.version import Version

DATA = resources.files("gpuship.cuda") / "data" / "knowledge.yaml"


def raw() -> dict[str, object]:
    loaded = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_header() -> None:
    kb = knowledge_base()
    assert kb.schema_version == 1
    assert kb.updated


def test_every_row_has_a_source() -> None:
    kb = knowledge_base()
    rows: list[object] = [
        *kb.toolkits,
        *kb.minor_compat.families,
        *kb.minor_compat.caveats,
        *kb.gpus,
        *kb.arch_support.targets,
        *kb.torch.releases,
        *(v for r in kb.torch.releases for v in r.variants),
    ]
    for row in rows:
        assert getattr(row, "source", "").strip(), row
    assert kb.forward_compat.source and kb.brands.source and kb.binary_compat.source
    for release in kb.torch.releases:
        assert (release.pypi_default is None) == (release.pypi_default_source is None), release
        for variant in release.variants:
            if variant.cuda_runtime_wheel:
                assert variant.cuda_runtime_wheel_source


def test_no_duplicates() -> None:
    kb = knowledge_base()
    versions = [Version.parse(r.version) for r in kb.toolkits]
    assert len(set(versions)) == len(versions)
    assert len({f.major for f in kb.minor_compat.families}) == len(kb.minor_compat.families)
    assert len({g.name for g in kb.gpus}) == len(kb.gpus)
    sms = [Version.parse(t.sm) for t in kb.arch_support.targets]
    assert len(set(sms)) == len(sms)
    torch = [Version.parse(r.version) for r in kb.torch.releases]
    assert len(set(torch)) == len(torch)
    for release in kb.torch.releases:
        names = [v.name for v in release.variants]
        assert len(set(names)) == len(names), release.version


def test_min_driver_never_decreases_with_newer_toolkits() -> None:
    rows = sorted(knowledge_base().toolkits, key=lambda r: Version.parse(r.version))
    drivers = [Version.parse(r.min_driver) for r in rows]
    assert drivers == sorted(drivers)


def test_every_toolkit_major_has_a_family() -> None:
    kb = knowledge_base()
    families = {f.major for f in kb.minor_compat.families}
    assert {Version.parse(r.version).major for r in kb.toolkits} <= families


def test_family_floor_not_above_first_release_driver() -> None:
    kb = knowledge_base()
    for family in kb.minor_compat.families:
        if family.floor is None:
            continue
        ga = min(
            (r for r in kb.toolkits if Version.parse(r.version).major == family.major),
            key=lambda r: Version.parse(r.version),
        )
        # 11.0 shipped with an older driver than its family floor (documented footnote).
        if family.major != 11:
            assert Version.parse(family.floor) <= Version.parse(ga.min_driver)


def test_torch_variants_are_buildable_with_their_cuda() -> None:
    known = set(known_cuda_releases())
    for release in knowledge_base().torch.releases:
        names = {v.name for v in release.variants}
        assert release.pypi_default is None or release.pypi_default in names
        for variant in release.variants:
            cuda = cuda_of_variant(variant.name)
            assert cuda in known, (release.version, variant.name)
            if variant.arch_list:
                for target in parse_arch_list(variant.arch_list):
                    assert can_compile(cuda, target), (release.version, variant.name, target)


def test_brand_names_cover_nvml_enum() -> None:
    names = knowledge_base().brands.names
    assert len(names) == 17  # NVML_BRAND_UNKNOWN .. NVML_BRAND_TITAN_RTX
    assert names[0] == "Unknown"
    forward = {b.lower() for b in knowledge_base().forward_compat.brands}
    assert forward <= {n.lower() for n in names}
    assert "geforce" not in forward


def test_loader_rejects_missing_source() -> None:
    data = raw()
    toolkits = data["toolkits"]
    assert isinstance(toolkits, list)
    del toolkits[0]["source"]
    with pytest.raises(KnowledgeBaseError, match="invalid CUDA knowledge base"):
        parse_knowledge_base(yaml.safe_dump(data))


def test_loader_rejects_bad_version() -> None:
    data = raw()
    toolkits = data["toolkits"]
    assert isinstance(toolkits, list)
    toolkits[0]["min_driver"] = "latest"
    with pytest.raises(KnowledgeBaseError):
        parse_knowledge_base(yaml.safe_dump(data))


def test_loader_rejects_unknown_schema() -> None:
    data = raw()
    data["schema_version"] = 2
    with pytest.raises(KnowledgeBaseError):
        parse_knowledge_base(yaml.safe_dump(data))
