"""Dockerized targets: images per target server, containers for ``backend="docker"``.

See ``docker/README.md`` for the registry-less recipe (debootstrap base, ``docker import``).
"""
from __future__ import annotations

from harness_gym.docker.containers import (
    TargetContainer,
    parse_docker_backend,
    reap,
    start_target,
)
from harness_gym.docker.images import IMAGES, docker_client, ensure_image

__all__ = ["IMAGES", "TargetContainer", "docker_client", "ensure_image", "parse_docker_backend", "reap", "start_target"]
