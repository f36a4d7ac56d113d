"""The base image without a registry: debootstrap a minimal Debian, ``docker import`` it.

``harness-gym docker base`` (root, Debian's ``debootstrap``) builds ``harness-gym/base:bookworm``:
bookworm ``minbase`` with python3, venv and CA certificates, documentation and apt lists
removed. The mirror is the first Debian mirror in apt's sources (or ``--mirror``), so a
machine that can install Debian packages can build it. Engines that can pull from a
registry may skip this and set ``HARNESS_GYM_DOCKER_BASE=debian:bookworm-slim``.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from harness_gym.errors import ConfigError, one_line

SUITE = "bookworm"
PACKAGES = ("python3", "python3-venv", "ca-certificates")
TRIM = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/lib/apt/lists",
        "var/cache/apt", "var/cache/debconf/templates.dat-old", "var/log")
DEFAULT_MIRROR = "http://deb.debian.org/debian"


def apt_mirror(sources: tuple[str, ...] = ("/etc/apt/sources.list", "/etc/apt/sources.list.d")) -> str:
    """The first plain Debian mirror in apt's sources (one-line and deb822 formats)."""
    files: list[Path] = []
    for src in sources:
        p = Path(src)
        files += sorted(p.glob("*")) if p.is_dir() else [p] if p.exists() else []
    for f in files:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        for m in re.finditer(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", text, re.MULTILINE):
            if "security" not in m.group(1) and "security" not in m.group(2):
                return m.group(1).rstrip("/")
        for m in re.finditer(r"^URIs:\s*(\S+)", text, re.MULTILINE):
            if "security" not in m.group(1):
                return m.group(1).rstrip("/")
    return DEFAULT_MIRROR


def build_base(client: Any, tag: str, *, mirror: str | None = None, workdir: str | None = None) -> dict[str, Any]:
    """debootstrap + import; returns ``{"tag", "id", "size_mb", "seconds", "mirror"}``."""
    if os.geteuid() != 0:
        raise ConfigError("building the base image needs root (debootstrap); run `sudo harness-gym docker base`")
    if shutil.which("debootstrap") is None:
        raise ConfigError("debootstrap is not installed: `apt-get install debootstrap` (or pull debian:bookworm-slim "
                          "and set HARNESS_GYM_DOCKER_BASE)")
    mirror = mirror or apt_mirror()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hg-base-", dir=workdir) as tmp:
        root = Path(tmp) / "rootfs"
        cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(root), mirror]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise ConfigError(one_line(f"debootstrap from {mirror} failed (exit {proc.returncode}): {' | '.join(tail)}"))
        for rel in TRIM:
            target = root / rel
            if target.is_dir():
                for child in target.iterdir():
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            elif target.exists():
                target.unlink()
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            for child in sorted(root.iterdir()):
                tar.add(child, arcname=child.name)
        repo, _, version = tag.rpartition(":")
        out = client.api.import_image(src=str(archive), repository=repo, tag=version,
                                      changes=['ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
                                               'ENV LANG=C.UTF-8', 'CMD ["/bin/bash"]'])
    image = client.images.get(tag)
    return {"tag": tag, "id": image.id, "size_mb": round(image.attrs["Size"] / 2**20, 1),
            "seconds": round(time.monotonic() - t0, 1), "mirror": mirror, "import": str(out)[:80]}
