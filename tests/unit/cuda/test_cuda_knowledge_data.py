"""The packaged data file: valid, sourced, free of duplicates and internally consistent."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from importlib import resources
from typing import Any

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
    assert kb.schema_version == 5
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
    rows.extend(kb.cuda_library_wheels)
    rows.extend(w for s in kb.cuda_library_wheels for w in s.wheels)
    for row in rows:
        assert getattr(row, "source", "").strip(), row
    assert kb.forward_compat.source and kb.brands.source and kb.binary_compat.source
    assert kb.cuda_image_libraries.source
    for release in kb.torch.releases:
        assert (release.pypi_default is None) == (release.pypi_default_source is None), release
        assert release.complete == bool(release.complete_source), release.version
        for variant in release.variants:
            assert bool(variant.cuda_runtime_wheel) == bool(variant.cuda_runtime_wheel_source)
            assert (variant.arch_list is None) == (variant.arch_list_source is None), variant


def test_torch_releases_cover_113_to_newest() -> None:
    """Every minor release from 1.13 (2.0 follows 1.13) to the newest gpuship checked."""
    versions = [Version.parse(r.version) for r in knowledge_base().torch.releases]
    expected = [Version.parse("1.13")] + [Version.parse(f"2.{m}") for m in range(16)]
    assert versions == expected


def test_only_closed_releases_are_complete() -> None:
    """From 2.9, CUDA 12.9 wheels were built outside the release matrix: those rows stay open."""
    complete = {r.version for r in knowledge_base().torch.releases if r.complete}
    assert complete == {"1.13", "2.0", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8"}


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
    data["schema_version"] = 3
    with pytest.raises(KnowledgeBaseError):
        parse_knowledge_base(yaml.safe_dump(data))


# Each mutation of the real file, and the one-line problem the loader must report for it: the
# path in the document, then what is wrong there.
MUTATIONS: dict[str, tuple[Callable[[Any], None], str]] = {
    "variant name pattern": (
        lambda d: d["torch"]["releases"][3]["variants"][0].update(name="cu12x"),
        "torch.releases[3].variants[0].name: 'cu12x' does not match ^cu[0-9]{3,4}$",
    ),
    "unknown key": (
        lambda d: d["toolkits"][2].update(foo="bar"),
        "toolkits[2]: unknown key 'foo'",
    ),
    "unknown top-level key": (
        lambda d: d.update(extra=1),
        "unknown key 'extra'",
    ),
    "missing key": (
        lambda d: d["arch_support"].pop("targets"),
        "arch_support: missing key 'targets'",
    ),
    "missing source": (
        lambda d: d["toolkits"][0].pop("source"),
        "toolkits[0]: missing key 'source'",
    ),
    "empty source": (
        lambda d: d["brands"].update(source=""),
        "brands.source: must not be empty",
    ),
    "unquoted version is a float": (
        lambda d: d["toolkits"][2].update(version=12.4),
        "toolkits[2].version: expected str, got float 12.4",
    ),
    "int where str is expected": (
        lambda d: d["gpus"][0].update(name=100),
        "gpus[0].name: expected str, got int 100",
    ),
    "bool is not an int": (
        lambda d: d["minor_compat"]["families"][0].update(major=True),
        "minor_compat.families[0].major: expected int, got bool True",
    ),
    "str is not an int": (
        lambda d: d["minor_compat"]["families"][0].update(major="13"),
        "minor_compat.families[0].major: expected int, got str '13'",
    ),
    "int is not a bool": (
        lambda d: d["toolkits"][1].update(prerelease=1),
        "toolkits[1].prerelease: expected bool, got int 1",
    ),
    "null where not optional": (
        lambda d: d["toolkits"][1].update(label=None),
        "toolkits[1].label: expected str, got null",
    ),
    "scalar where a list is expected": (
        lambda d: d["binary_compat"]["rules"][0].update({"except": "5.3"}),
        "binary_compat.rules[0].except: expected a list, got str '5.3'",
    ),
    "python field name is not the yaml key": (
        lambda d: d["binary_compat"]["rules"][0].update(except_=["5.3"]),
        "binary_compat.rules[0]: unknown key 'except_'",
    ),
    "list item type": (
        lambda d: d["brands"]["names"].__setitem__(4, 5),
        "brands.names[4]: expected str, got int 5",
    ),
    "list where a mapping is expected": (
        lambda d: d.update(torch=[]),
        "torch: expected a mapping, got list []",
    ),
    "sources value type": (
        lambda d: d["sources"].update(table3=3),
        "sources.table3: expected str, got int 3",
    ),
    "literal value": (
        lambda d: d["gpus"][0].update(segment="server"),
        "gpus[0].segment: str 'server' is not one of 'datacenter', 'workstation',",
    ),
    "schema version": (
        lambda d: d.update(schema_version=1),
        "schema_version: int 1 is not one of 5",
    ),
    "schema version true is not 4": (
        lambda d: d.update(schema_version=True),
        "schema_version: bool True is not one of 5",
    ),
    "cudnn major without its source": (
        lambda d: d["torch"]["releases"][0].pop("cudnn_major_source"),
        "torch.releases[0].cudnn_major_source: required when cudnn_major is set",
    ),
    "retired variant not a variant": (
        lambda d: d["torch"]["retired_variants"][0].update(name="cuda118"),
        "torch.retired_variants[0].name: 'cuda118' does not match",
    ),
    "complete without its source": (
        lambda d: d["torch"]["releases"][0].pop("complete_source"),
        "torch.releases[0].complete_source: required when complete is true",
    ),
    "arch list without its source": (
        lambda d: d["torch"]["releases"][1]["variants"][1].pop("arch_list_source"),
        "torch.releases[1].variants[1].arch_list_source: required when arch_list is set",
    ),
    "pypi default not a variant": (
        lambda d: d["torch"]["releases"][2].update(pypi_default="cu999"),
        "torch.releases[2].pypi_default: 'cu999' is not one of the variants",
    ),
    "variant channel": (
        lambda d: d["torch"]["releases"][2]["variants"][0].update(channel="beta"),
        "torch.releases[2].variants[0].channel: str 'beta' is not one of 'stable',",
    ),
    "wheel size is a number": (
        lambda d: d["cuda_library_wheels"][0]["wheels"][0].update(size_mb="594"),
        "cuda_library_wheels[0].wheels[0].size_mb: expected float, got str '594'",
    ),
    "wheel size positive": (
        lambda d: d["cuda_library_wheels"][0]["wheels"][0].update(size_mb=0.0),
        "cuda_library_wheels[0].wheels[0].size_mb: must be positive",
    ),
    "bad version": (
        lambda d: d["toolkits"][0].update(min_driver="latest"),
        "toolkits[0].min_driver: invalid version 'latest'",
    ),
    "bad optional version": (
        lambda d: d["arch_support"]["targets"][1].update(removed="soon"),
        "arch_support.targets[1].removed: invalid version 'soon'",
    ),
    "bad compute capability": (
        lambda d: d["gpus"][2].update(compute_capability="sm_70"),
        "gpus[2].compute_capability: invalid version 'sm_70'",
    ),
    "bad torch version": (
        lambda d: d["torch"]["releases"][0].update(version="2.x"),
        "torch.releases[0].version: invalid version '2.x'",
    ),
}


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_loader_names_the_path_at_fault(case: str) -> None:
    mutate, problem = MUTATIONS[case]
    data = raw()  # a fresh load each call: mutating it touches no other test
    mutate(data)
    with pytest.raises(KnowledgeBaseError) as caught:
        parse_knowledge_base(yaml.safe_dump(data), "kb.yaml")
    message = str(caught.value)
    assert message.startswith(f"kb.yaml: invalid CUDA knowledge base: {problem}"), message
    assert "\n" not in message


def test_loader_accepts_the_real_file_round_tripped() -> None:
    assert parse_knowledge_base(yaml.safe_dump(raw())) == knowledge_base()


def test_loader_reads_except_key() -> None:
    rules = {r.code: r for r in knowledge_base().binary_compat.rules}
    assert rules["5.0"].except_ == ("5.3",)
    assert rules["5.3"].except_ == ()


def test_loader_reports_yaml_syntax_errors_on_one_line() -> None:
    with pytest.raises(KnowledgeBaseError) as caught:
        parse_knowledge_base("toolkits: [1,\n  b: 2\n", "kb.yaml")
    message = str(caught.value)
    assert re.match(r"kb\.yaml: invalid CUDA knowledge base: \S", message), message
    assert "\n" not in message


def test_loader_rejects_an_empty_document() -> None:
    with pytest.raises(KnowledgeBaseError, match="expected a mapping, got null"):
        parse_knowledge_base("", "kb.yaml")


def test_knowledge_base_does_not_import_pydantic() -> None:
    # `gpuship lint` reaches the knowledge base at start-up; pydantic alone costs ~85 ms there.
    code = (
        "import sys; from gpuship.cuda.knowledge import knowledge_base; knowledge_base(); "
        "print('pydantic' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False", result.stderr
