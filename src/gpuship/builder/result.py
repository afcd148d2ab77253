"""The build stage's result (`gpuship build`): one of three outcomes, told apart by their keys.

A build that succeeded has a `digest` (null without --push); one the builder stopped has an
`error` and the builder's last lines; a push the registry refused names what was and was not
pushed. Each starts with the cell, the builder and, when the build gets secrets, their ids
(kw_only: that optional key sits before the required ones, where the JSON has it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from gpuship.image_result import ImageResult
from gpuship.report.result import omitted_if_none


@dataclass(frozen=True, kw_only=True)
class Built:
    """The cell was built (and pushed, unless --no-push); its digest, tags and labels."""

    cell: str
    builder: str  # buildx | engine
    secrets: tuple[str, ...] | None = omitted_if_none()  # the ids of the secrets it got
    digest: str | None
    image: str | None  # REPO@DIGEST
    image_id: str | None
    tags: tuple[str, ...]
    pushed: bool
    labels: Mapping[str, str]
    build_args: Mapping[str, str]
    steps: int
    cached_steps: int
    # The image stage's result for the pushed image, unless --no-image-checks.
    image_checks: ImageResult | None = omitted_if_none()


@dataclass(frozen=True, kw_only=True)
class NotBuilt:
    """The builder stopped with an error."""

    # Its name in the published schema (docs/results/build.schema.json), from before
    # `BuildFailed` came to mean only the exception a builder raises (builder/engine.py).
    PUBLISHED_NAME: ClassVar[str] = "BuildFailed"

    cell: str
    builder: str
    secrets: tuple[str, ...] | None = omitted_if_none()
    error: str
    output_tail: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class PushRefused:
    """The registry refused a tag: the tag set is incomplete and there is no digest."""

    cell: str
    builder: str
    secrets: tuple[str, ...] | None = omitted_if_none()
    pushed: tuple[str, ...]
    not_pushed: tuple[str, ...]


BuildResult = Built | NotBuilt | PushRefused
