"""How a Dockerfile parses: BuildKit's parser in Python, shared by every stage that reads one."""

from gpuship.dockerfile.parser import (
    MAX_DOCKERFILE_BYTES,
    MAX_NODES,
    CommentNode,
    Dockerfile,
    DockerfileSyntaxError,
    DockerfileTooLarge,
    HeredocNode,
    Node,
    parse,
)

__all__ = [
    "MAX_DOCKERFILE_BYTES",
    "MAX_NODES",
    "CommentNode",
    "Dockerfile",
    "DockerfileSyntaxError",
    "DockerfileTooLarge",
    "HeredocNode",
    "Node",
    "parse",
]
