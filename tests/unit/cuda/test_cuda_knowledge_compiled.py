"""The generated Python form of the knowledge base: the same rows as the YAML, used only
while it matches the YAML, and loaded without importing a YAML parser."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources

import pytest

from gpuship.cuda import knowledge, knowledge_data
from gpuship.docs.knowledge_module import knowledge_module

YAML = resources.files("gpuship.cuda") / "data" / "knowledge.yaml"


def test_generated_module_is_current_and_equal_to_the_yaml() -> None:
    data = YAML.read_bytes()
    assert knowledge_module(data) == (YAML.parent.parent / "knowledge_data.py").read_text(
        encoding="utf-8"
    ), "stale: run `gpuship docs` to regenerate src/gpuship/cuda/knowledge_data.py"
    assert knowledge.parse_knowledge_base(data.decode()) == knowledge_data.KNOWLEDGE_BASE


def test_loader_uses_it_only_while_it_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    knowledge.knowledge_base.cache_clear()
    assert knowledge.knowledge_base() is knowledge_data.KNOWLEDGE_BASE
    knowledge.knowledge_base.cache_clear()
    monkeypatch.setattr(knowledge_data, "YAML_CRC32", knowledge_data.YAML_CRC32 ^ 1)  # edited
    try:
        loaded = knowledge.knowledge_base()
        assert (
            loaded is not knowledge_data.KNOWLEDGE_BASE and loaded == knowledge_data.KNOWLEDGE_BASE
        )
    finally:
        knowledge.knowledge_base.cache_clear()


def test_no_yaml_parser_on_the_way() -> None:
    code = "import sys; from gpuship.cuda.knowledge import knowledge_base; knowledge_base(); "
    code += "print('yaml' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
