#!/usr/bin/env bash
# On the machine without a Docker engine: unpack a bundle of docker/engine-bundle.sh under /opt/kj-docker
# and start dockerd without networking (the runner needs none: `--network none` containers), as root.
#   bash BUNDLE_DIR/engine-start.sh BUNDLE_DIR
#   export PATH=/opt/kj-docker/usr/bin:/opt/kj-docker/usr/sbin:$PATH
# The engine's log: /tmp/kj-dockerd.log. GPU access without the NVIDIA container toolkit: the device nodes
# passed and the driver's libraries mounted read-only, which the runner does (judge/runner/docker.py).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: engine-start.sh BUNDLE_DIR (a bundle of docker/engine-bundle.sh)" >&2; exit 2; }
b=$1
[ -f "$b/engine.tar.xz" ] && [ -f "$b/libs.tar.xz" ] || { echo "engine-start.sh: $b holds no engine bundle" >&2; exit 2; }
root=/opt/kj-docker
mkdir -p "$root"
tar -C "$root" -xJf "$b/engine.tar.xz"
tar -C "$root" -xJf "$b/libs.tar.xz"
export PATH=$root/usr/bin:$root/usr/sbin:$PATH
(LD_LIBRARY_PATH=$root/libs setsid dockerd --iptables=false --bridge=none > /tmp/kj-dockerd.log 2>&1 &)
for _ in $(seq 1 30); do docker info > /dev/null 2>&1 && break; sleep 1; done
docker info --format 'docker {{.ServerVersion}} storage={{.Driver}} cgroup={{.CgroupVersion}}' ||
    { tail -20 /tmp/kj-dockerd.log; exit 1; }
