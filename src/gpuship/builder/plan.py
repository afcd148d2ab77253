"""What `gpuship build` is asked to do for one cell: its tags, labels, registries and the
builder request, from the matrix cell and the command's options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpuship import labels as L
from gpuship.builder.registry_auth import registry_of
from gpuship.builder.secrets import check_secret_spec, check_ssh_spec, secret_ids, secret_values
from gpuship.builder.source import build_time, source_commit
from gpuship.compat.cell import CellSpec
from gpuship.docker.build import BuildRequest
from gpuship.errors import InputError, UsageError

SHORT_SHA = 7  # docker/metadata-action's default short SHA length
BASE_IMAGE_ARG = "BASE_IMAGE"


@dataclass(frozen=True)
class BuildPlan:
    """What `gpuship build` was asked to do for one cell."""

    cell: CellSpec
    directory: Path
    commit: str | None
    created: str
    push: bool
    builder: str  # auto | buildx | engine
    network: str | None
    image_checks: bool
    # BuildKit only: `--secret` specs, secret values by id, `--ssh` specs, attestations
    secrets: tuple[str, ...] = ()
    secret_values: Mapping[str, str] = field(default_factory=dict)
    ssh: tuple[str, ...] = ()
    provenance: str | None = None
    sbom: str | None = None

    @property
    def needs_buildkit(self) -> list[str]:
        """The options only BuildKit can honour that this plan asks for."""
        asked = {
            "secrets": bool(self.secrets or self.secret_values),
            "ssh": bool(self.ssh),
            "provenance": self.provenance is not None,
            "sbom": self.sbom is not None,
        }
        return [name for name, wanted in asked.items() if wanted]

    def registries(self) -> list[str]:
        """The registries a build talks to: push, cache, base image (each gets its own
        credential, nothing else: `builder/registry_auth.py`)."""
        references = [self.cell.repository, self.cell.build_args.get(BASE_IMAGE_ARG)]
        cache = self.cell.cache_from or ""
        if cache.startswith("type=registry,"):
            references.append(dict(_option(part) for part in cache.split(",")).get("ref"))
        return list(dict.fromkeys(registry_of(r) for r in references if r))

    @property
    def candidate_tag(self) -> str | None:
        """`<repo>:sha-<commit7>-<cell>`, the tag the release stage promotes."""
        if not self.commit:
            return None
        return f"{self.cell.repository}:sha-{self.commit[:SHORT_SHA]}-{self.cell.id}"

    def tags(self) -> tuple[str, ...]:
        """Candidate tag first, then the cell's tags; a local name when there is neither."""
        tags = [t for t in (self.candidate_tag, *self.cell.tags) if t]
        if not tags:
            tags = [f"{self.cell.repository}:{self.cell.id}"]
        return tuple(dict.fromkeys(tags))

    def labels(self) -> dict[str, str]:
        """The cell's labels plus the build time and commit."""
        labels = dict(self.cell.labels)
        labels[L.OCI_CREATED] = self.created
        if self.commit:
            labels[L.OCI_REVISION] = self.commit
        return labels

    def request(self) -> BuildRequest:
        """The builder request; InputError when the Dockerfile or context is missing."""
        context = (self.directory / self.cell.context).resolve()
        dockerfile = (self.directory / self.cell.dockerfile).resolve()
        if not context.is_dir():
            raise InputError(f"build context {self.cell.context} is not a directory")
        if not dockerfile.is_file():
            raise InputError(f"Dockerfile {self.cell.dockerfile} does not exist")
        return BuildRequest(
            context=context,
            dockerfile=dockerfile,
            tags=self.tags(),
            build_args=dict(self.cell.build_args),
            labels=self.labels(),
            target=self.cell.target,
            platform=self.cell.platforms[0] if len(self.cell.platforms) == 1 else None,
            network=self.network,
        )


@dataclass(frozen=True)
class BuildOptions:
    """The options of `gpuship build` besides the cell, as given."""

    commit: str | None
    push: bool
    builder: str
    network: str | None
    image_checks: bool
    secrets: tuple[str, ...]
    ssh: tuple[str, ...]
    provenance: str | None
    sbom: str | None


def plan_build(
    cell: CellSpec, directory: Path, options: BuildOptions, environ: Mapping[str, str]
) -> BuildPlan:
    """The plan for one cell built from `directory`: its commit and build time, its secrets
    checked (relative `src=` files from the working directory); UsageError when a push has
    no commit to tag, InputError for a secret or SSH spec BuildKit would refuse."""
    commit = source_commit(options.commit, environ, directory)
    if options.push and not commit:
        raise UsageError("no commit for the candidate tag: pass --commit or set GITHUB_SHA")
    values = secret_values(environ)
    specs = tuple(check_secret_spec(spec, environ, Path.cwd()) for spec in options.secrets)
    secret_ids(specs, values)
    return BuildPlan(
        cell=cell,
        directory=directory,
        commit=commit,
        created=build_time(environ),
        push=options.push,
        builder=options.builder,
        network=options.network,
        image_checks=options.image_checks,
        secrets=specs,
        secret_values=values,
        ssh=tuple(check_ssh_spec(spec) for spec in options.ssh),
        provenance=options.provenance,
        sbom=options.sbom,
    )


def _option(part: str) -> tuple[str, str]:
    key, _, value = part.partition("=")
    return key, value
