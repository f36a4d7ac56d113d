"""``harness-gym docker base|build|ls|prune``: the images and containers of ``backend="docker"``."""
from __future__ import annotations

import argparse
import json
from typing import Any

from harness_gym.docker.images import BASE_TAG, IMAGES, LABEL


def add_parser(sub: Any) -> None:
    d = sub.add_parser("docker", help="dockerized targets: base image, target images, containers")
    dsub = d.add_subparsers(dest="docker_command", required=True)
    b = dsub.add_parser("base", help="debootstrap a minimal Debian and import it as the base image (root)")
    b.add_argument("--mirror", default=None, help="Debian mirror (default: the first one in apt's sources)")
    b.add_argument("--tag", default=BASE_TAG)
    b.add_argument("--workdir", default=None, help="where to debootstrap (default: a temporary folder)")
    b.add_argument("--if-missing", action="store_true", help="do nothing when the tag exists")
    bu = dsub.add_parser("build", help="build (or find) the target images; also tags them :latest for compose")
    bu.add_argument("targets", nargs="*", metavar="TARGET", help=f"any of {', '.join(IMAGES)} (default: all)")
    dsub.add_parser("ls", help="list harness-gym containers on this engine")
    p = dsub.add_parser("prune", help="remove containers whose owner process is gone (--all: every one)")
    p.add_argument("--all", action="store_true")
    p.add_argument("--images", action="store_true", help="also remove target images other than this version's")


def run(args: argparse.Namespace) -> int:
    from harness_gym.docker.containers import reap
    from harness_gym.docker.images import (
        docker_client,
        ensure_image,
        image_def,
        prune_images,
    )

    for target in getattr(args, "targets", []):
        image_def(target)  # an unknown name fails before anything starts
    client = docker_client()
    if args.docker_command == "base":
        from harness_gym.docker.base import build_base

        if args.if_missing and client.images.list(name=args.tag):
            print(json.dumps({"tag": args.tag, "built": False}))
            return 0
        print(json.dumps(build_base(client, args.tag, mirror=args.mirror, workdir=args.workdir)))
    elif args.docker_command == "build":
        for target in args.targets or list(IMAGES):
            info = ensure_image(client, target)
            client.images.get(info["tag"]).tag(f"harness-gym/{target}", "latest")
            print(json.dumps(info))
    elif args.docker_command == "ls":
        for c in client.containers.list(all=True, filters={"label": LABEL}):
            print(f"{c.name}\t{c.status}\t{c.labels.get('harness-gym.target', '?')}\towner={c.labels.get('harness-gym.owner', '?')}")
    elif args.docker_command == "prune":
        removed = reap(client, everything=args.all)
        print(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed) if removed else ""))
        if args.images:
            print(f"removed {len(prune_images(client))} stale image tag(s)")
    return 0
