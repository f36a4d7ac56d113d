"""Target images: one per target server, found by a content tag or built with the docker SDK.

``harness-gym/webshop`` and ``harness-gym/alfworld`` run the world server (one Dockerfile,
``--build-arg TARGET``); ``harness-gym/dbbench`` is DBBench's MySQL-compatible database
(MariaDB from Debian). A tag is ``<package version>-<digest>`` of everything that goes into
the image (Dockerfile, build args, files, base image id), so an image always matches the
code that talks to it and an unchanged one is never rebuilt.
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_gym import __version__
from harness_gym.errors import ConfigError, WorldError, one_line

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # .../harness_gym
BASE_TAG = "harness-gym/base:bookworm"
LABEL = "harness-gym.managed"


@dataclass(frozen=True)
class ImageDef:
    target: str
    dockerfile: str  # relative to this folder
    port: int  # the port the server listens on inside the container (bridge networking)
    files: tuple[str, ...]  # paths under the harness_gym package that go into the build context
    buildargs: dict[str, str] = field(default_factory=dict)
    scheme: str = "http"
    wheels: bool = True  # the pinned requirements as wheels in the context (``wheels/``)


IMAGES: dict[str, ImageDef] = {
    "webshop": ImageDef("webshop", "world.Dockerfile", 8765, ("",), {"TARGET": "webshop"}),
    "alfworld": ImageDef("alfworld", "world.Dockerfile", 8765, ("",), {"TARGET": "alfworld"}),
    "dbbench": ImageDef("dbbench", "mariadb.Dockerfile", 3306, ("docker/mariadb-entrypoint.sh",), scheme="mysql",
                       wheels=False),
}


def base_tag() -> str:
    return os.environ.get("HARNESS_GYM_DOCKER_BASE", BASE_TAG)


def image_def(target: str) -> ImageDef:
    if target not in IMAGES:
        raise ConfigError(f"no docker image for target {target!r}: expected one of {sorted(IMAGES)}")
    return IMAGES[target]


def _context_files(d: ImageDef) -> list[tuple[str, Path]]:
    """(path in the build context, file) pairs, sorted; ``harness_gym/...`` like the repository."""
    out: list[tuple[str, Path]] = []
    for rel in d.files:
        src = PACKAGE_ROOT / rel
        paths = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
        for p in paths:
            if "__pycache__" in p.parts or p.suffix in (".pyc", ".pyo"):
                continue
            out.append(("harness_gym/" + p.relative_to(PACKAGE_ROOT).as_posix(), p))
    out.append((f"harness_gym/docker/{d.dockerfile}", HERE / d.dockerfile))
    out.append(("harness_gym/docker/requirements.txt", HERE / "requirements.txt"))
    return sorted(set(out))


def image_tag(d: ImageDef, base_id: str) -> str:
    h = hashlib.sha256()
    h.update(f"{d.dockerfile}\0{sorted(d.buildargs.items())}\0{base_id}\0".encode())
    for rel, path in _context_files(d):
        h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"harness-gym/{d.target}:{__version__}-{h.hexdigest()[:12]}"


def docker_client() -> Any:
    """A docker SDK client from the environment (``DOCKER_HOST`` or the local socket)."""
    try:
        import docker  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ConfigError("backend='docker' needs the docker SDK: pip install 'harness-gym[docker]'") from exc
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - docker.errors.DockerException and connection errors
        raise WorldError(one_line(
            f"no Docker engine answers ({exc}); start dockerd (see docker/README.md) or set DOCKER_HOST")) from None
    return client


def find_base(client: Any) -> Any:
    import docker

    tag = base_tag()
    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        if tag != BASE_TAG:  # a registry image (debian:bookworm-slim): let the engine pull it
            try:
                return client.images.pull(tag)
            except docker.errors.APIError as exc:
                raise WorldError(one_line(f"base image {tag} is not here and cannot be pulled: {exc}")) from None
        raise ConfigError(f"base image {tag} not found: build it with `harness-gym docker base` (debootstrap, root), "
                          "or set HARNESS_GYM_DOCKER_BASE=debian:bookworm-slim where a registry is reachable") from None


def ensure_image(client: Any, target: str, *, build: bool = True,
                 log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The image for ``target``: found by tag, else built. ``{"tag", "built", "seconds", "size_mb"}``."""
    import docker

    d = image_def(target)
    base = find_base(client)
    tag = image_tag(d, base.id)
    t0 = time.monotonic()
    try:
        image = client.images.get(tag)
        built = False
    except docker.errors.ImageNotFound:
        if not build:
            raise ConfigError(f"image {tag} is not built; run `harness-gym docker build {target}`") from None
        image = _build(client, d, tag, base_tag(), log)
        built = True
    return {"target": target, "tag": tag, "built": built, "seconds": round(time.monotonic() - t0, 1),
            "size_mb": round(image.attrs["Size"] / 2**20, 1)}


def download_wheels(dest: Path) -> None:
    """The pinned requirements as wheels for the image's CPython 3.11, fetched by this host's pip.

    The image installs them with ``--no-index``: a build needs no index, proxy or CA
    certificate inside the container (pip inside a fresh Debian does not trust a proxy's CA
    that the host trusts)."""
    arch = platform.machine()
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet", "--no-deps",
           "--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311", "--abi", "abi3",
           "--abi", "none", "--platform", f"manylinux2014_{arch}", "--platform", f"manylinux_2_17_{arch}",
           "--platform", f"manylinux_2_28_{arch}", "--platform", "any", "-d", str(dest), "-r", str(HERE / "requirements.txt")]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise WorldError(one_line(f"pip download of the image's requirements failed: {proc.stderr.strip()[-300:]}"))


def _build(client: Any, d: ImageDef, tag: str, base: str, log: Callable[[str], None] | None) -> Any:
    import docker

    with tempfile.TemporaryDirectory(prefix=f"hg-build-{d.target}-") as ctx:
        for rel, path in _context_files(d):
            dest = Path(ctx) / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        (Path(ctx) / "wheels").mkdir()
        if d.wheels:
            download_wheels(Path(ctx) / "wheels")
        try:
            # network_mode=host: package installs work on engines started with --bridge=none
            image, lines = client.images.build(
                path=ctx, dockerfile=f"harness_gym/docker/{d.dockerfile}", tag=tag, rm=True, forcerm=True,
                network_mode="host", buildargs={"BASE": base, **d.buildargs},
                labels={LABEL: "1", "harness-gym.target": d.target, "harness-gym.version": __version__})
        except docker.errors.BuildError as exc:
            lines = [str(x.get("stream") or x.get("error") or "").strip() for x in exc.build_log]
            tail = " | ".join([t for t in lines if t][-3:])
            raise WorldError(one_line(f"building {tag} failed: {tail}", limit=600)) from None
        except docker.errors.APIError as exc:
            raise WorldError(one_line(f"building {tag} failed: {exc}")) from None
        if log:
            for x in lines:
                if x.get("stream", "").strip():
                    log(x["stream"].rstrip())
    return image


def prune_images(client: Any) -> list[str]:
    """Remove harness-gym target image tags other than the ones this code would use."""
    import docker

    try:
        base_id = find_base(client).id
    except (ConfigError, WorldError):
        base_id = ""
    keep = {image_tag(d, base_id) for d in IMAGES.values()} | {f"harness-gym/{t}:latest" for t in IMAGES}
    removed = []
    for image in client.images.list(filters={"label": LABEL}):
        for tag in image.tags:
            if tag not in keep:
                try:
                    client.images.remove(tag, noprune=False)
                    removed.append(tag)
                except docker.errors.APIError:
                    pass  # in use by a container
    return removed
