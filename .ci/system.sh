#!/usr/bin/env bash
# System packages the tests need besides MariaDB and Docker (their own scripts): bubblewrap for
# the hook sandbox. Idempotent: installs only what is missing, then checks that bwrap can
# start a sandbox here (user and other namespaces), saying why not if the kernel refuses.
set -euo pipefail
sudo=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi

if ! command -v bwrap >/dev/null 2>&1; then
    echo "system.sh: installing bubblewrap" >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >&2
fi
if bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 \
        --symlink usr/bin /bin -- /bin/true 2>/tmp/bwrap-check.log; then
    echo "system.sh: $(bwrap --version) starts sandboxes here" >&2
else
    echo "system.sh: bwrap is installed but cannot create namespaces here: $(tail -n 1 /tmp/bwrap-check.log)" >&2
    echo "system.sh: (user namespaces may be disabled: sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces)" >&2
fi
