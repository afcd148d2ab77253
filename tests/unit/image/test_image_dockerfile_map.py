"""Layers mapped back to the Dockerfile lines that made them."""

from __future__ import annotations

from gpuship.image.dockerfile_map import final_stage_instructions, map_layers

DOCKERFILE = """\
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04 AS build
RUN make all

FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04
# system packages
RUN apt-get update && \\
    apt-get install -y python3
COPY --chown=1000 requirements.txt /app/
RUN pip install -r /app/requirements.txt
ENV X=1
ADD model.tar /models
"""


def test_final_stage_instructions_with_start_lines() -> None:
    found = [(i.line, i.keyword) for i in final_stage_instructions(DOCKERFILE)]
    assert found == [(6, "RUN"), (8, "COPY"), (9, "RUN"), (11, "ADD")]


def test_buildkit_history_maps_to_lines() -> None:
    history = [
        "RUN /bin/sh -c apt-get update &&     apt-get install -y python3 # buildkit",
        "COPY requirements.txt /app/ # buildkit",
        "RUN /bin/sh -c pip install -r /app/requirements.txt # buildkit",
        "ADD model.tar /models # buildkit",
    ]
    assert map_layers(history, final_stage_instructions(DOCKERFILE)) == [6, 8, 9, 11]


def test_legacy_builder_history_and_unknown_layers() -> None:
    history = [
        "/bin/sh -c #(nop) ADD file:abc123 in / ",  # the base image's layer
        "/bin/sh -c apt-get update && apt-get install -y python3",
        "/bin/sh -c #(nop) COPY file:0f1e2d in /app/ ",
        "|1 TOKEN=x /bin/sh -c pip install -r /app/requirements.txt",
    ]
    assert map_layers(history, final_stage_instructions(DOCKERFILE)) == [None, 6, 8, 9]


def test_heredoc_bodies_are_not_instructions_and_lines_join_as_buildkit_joins() -> None:
    dockerfile = (
        "FROM base\n"
        "COPY <<EOF /etc/app.conf\n"
        "FROM inside-a-heredoc\n"
        "RUN not-an-instruction\n"
        "EOF\n"
        "RUN make\\\n"
        "install\n"
    )
    found = [(i.line, i.keyword, i.args) for i in final_stage_instructions(dockerfile)]
    assert found == [(2, "COPY", "<<EOF /etc/app.conf"), (6, "RUN", "makeinstall")]
    assert final_stage_instructions("FROM a\nRUN <<EOF\nunterminated\n") == []
