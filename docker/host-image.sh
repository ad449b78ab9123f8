#!/usr/bin/env bash
# Build a tiny judging image without any registry: a skeleton root file system (empty /usr, the
# merged-/usr links, passwd with `nobody`, the loader's cache) imported with `docker import`.
# Everything else comes from this machine, bind-mounted read-only at run time by
# `judge submit --runner docker --image TAG --docker-host-env` (/usr with the CUDA toolkit and the
# compiler, the Python environment, the driver's libraries).
# Usage: bash docker/host-image.sh [TAG, default kernel-judge:host]      (prints the tag)
set -euo pipefail
tag=${1:-kernel-judge:host}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{usr,etc,tmp,work,proc,sys,dev,run,opt,var/tmp}
chmod 1777 "$root/tmp" "$root/var/tmp"
for d in bin sbin lib lib32 lib64 libx32; do  # merged /usr: keep the links; real folders are mounted
  if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$root/$d"; fi
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
for f in /etc/ld.so.cache /etc/ld.so.conf /etc/ld.so.conf.d /etc/alternatives; do
  if [ -e "$f" ]; then cp -a "$f" "$root/etc/"; fi
done
tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C "$root" -c . \
  | docker import --change 'USER 65534:65534' --change 'WORKDIR /work' - "$tag" >/dev/null
echo "$tag"
