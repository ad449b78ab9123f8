#!/usr/bin/env bash
# A Docker engine to carry to a machine that has none and cannot install one (no network, no
# registry: the GPU machine kernel-judge's own measurements ran on). Run where apt works, from the
# repository root; it writes BUNDLE_DIR (default .dockerbundle; keep it out of git):
#   engine.tar.xz    dockerd, docker, containerd, its runc shim, runc and docker-init from Debian's
#                    docker.io, containerd and runc packages (`apt-get download`, no install)
#   libs.tar.xz      the shared libraries those link against, less libc's own
#   engine-start.sh  this folder's starter (docker/engine-start.sh), to run there
# Then on the GPU machine: `bash BUNDLE_DIR/engine-start.sh BUNDLE_DIR` (docker/README.md).
#   bash docker/engine-bundle.sh [BUNDLE_DIR]
set -euo pipefail
out=${1:-.dockerbundle}
command -v apt-get >/dev/null || { echo "engine-bundle.sh: needs apt-get (a Debian or Ubuntu machine)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download docker.io containerd runc >/dev/null)
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
bins=()  # docker-init is a link to tini, which these packages lack: only what is there
for b in usr/sbin/dockerd usr/bin/docker usr/bin/containerd usr/bin/containerd-shim-runc-v2 usr/sbin/runc usr/bin/docker-init; do
    [ -e "$tmp/root/$b" ] && bins+=("$b")
done
tar -C "$tmp/root" -cJf "$out/engine.tar.xz" "${bins[@]}"
mkdir -p "$tmp/libs"
for b in "${bins[@]}"; do ldd "$tmp/root/$b" 2>/dev/null || true; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
    sort -u | { grep -vE '/(libc|libm|libdl|libpthread|librt)\.so|/ld-linux' || true; } |
    while read -r lib; do cp -L "$lib" "$tmp/libs/"; done
tar -C "$tmp" -cJf "$out/libs.tar.xz" libs
cp "$here/engine-start.sh" "$out/"
du -sh "$out"
