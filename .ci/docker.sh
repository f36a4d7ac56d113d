#!/usr/bin/env bash
# Install (Debian) and start a Docker engine for the Docker tests; no registry is needed.
#
# docker.io + debootstrap + docker-compose from Debian's packages; dockerd runs in the
# background (overlay2, --iptables=false --bridge=none: only the host and none networks
# exist; tests create their own bridge network). Idempotent: a running engine is reused.
# The base image is built afterwards by `harness-gym docker base` (see .ci/run).
set -euo pipefail
sudo=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1 \
    || ! command -v docker-compose >/dev/null 2>&1; then
    echo "docker.sh: installing docker.io debootstrap docker-compose" >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap docker-compose >&2
fi
if ! docker info >/dev/null 2>&1; then
    echo "docker.sh: starting dockerd (log: /tmp/dockerd.log)" >&2
    $sudo nohup dockerd --storage-driver=overlay2 --iptables=false --bridge=none >/tmp/dockerd.log 2>&1 &
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    if ! docker info >/dev/null 2>&1; then
        echo "docker.sh: dockerd did not answer within 60 s" >&2
        tail -n 20 /tmp/dockerd.log >&2
        exit 1
    fi
fi
docker version --format 'docker.sh: engine {{.Server.Version}}' >&2
