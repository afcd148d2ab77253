"""The sample project of workflows-examples, pointed at the bed registry, with its bases pushed."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from sample_bed import PLACEHOLDER_REGISTRY, SAMPLE, SampleProject, push_base

from bed.docker_engine import DockerEngine
from bed.registry import Registry
from gpuship.cli.config_catalog import load_config
from gpuship.matrix.cells import base_references
from gpuship.matrix.targets import image_targets


@pytest.fixture
def sample_project(
    tmp_path: Path, registry: Registry, docker_engine: DockerEngine
) -> Callable[[str], SampleProject]:
    """Function: unique repo prefix -> a sample project copy with its bases in the registry."""

    def make(prefix: str) -> SampleProject:
        directory = tmp_path / prefix
        shutil.copytree(SAMPLE, directory)
        config = directory / "gpuship.yaml"
        text = config.read_text().replace(PLACEHOLDER_REGISTRY, registry.host)
        config.write_text(text.replace("/sample/", f"/{prefix}/"))
        env = {
            **docker_engine.cli_env(),
            "GITHUB_SHA": "0123456789abcdef" * 2 + "01234567",
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_REPOSITORY": "acme/app",
        }
        env.pop("GITHUB_ACTIONS", None)
        project = SampleProject(directory, registry, env)
        loaded = load_config(config, {}).config
        for image in loaded.images:
            references = base_references(image, image_targets(image, directory))
            assert references
            for reference in references:
                cuda = reference.rsplit(":", 1)[1].split("-")[0]
                push_base(registry, reference, cuda)
        return project

    return make
