#!/usr/bin/env bash
# Makes an arm64 (aarch64) sysroot of Debian 12's own -dev packages for cross-building with
# cmake/aarch64-linux-gnu.cmake, from the machine's configured apt sources:
#   scripts/arm64-sysroot.sh DIR     (default build-arm64/sysroot; kept when it is already complete)
# The host needs g++-aarch64-linux-gnu, qemu-user-static and mmdebstrap (scripts/install-deps.sh).
# --variant=extract unpacks the packages without running anything of them, so no emulator is needed
# (and the host's apt needs no foreign architecture).
set -euo pipefail
dir=${1:-build-arm64/sysroot}
stamp="$dir/.smolvlm-sysroot"
packages=libc6-dev,libstdc++-12-dev,zlib1g-dev,libssl-dev,libjpeg62-turbo-dev,libpng-dev,libwebp-dev,libgif-dev
packages+=,nlohmann-json3-dev,libcli11-dev,libgtest-dev,libgmock-dev,libonig-dev,libutf8proc-dev
packages+=,libcurl4-openssl-dev,libcpp-httplib-dev
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$packages" ]; then
  echo "arm64 sysroot: $dir (cached)"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
mmdebstrap --quiet --arch=arm64 --variant=extract --include="$packages" bookworm "$dir"
echo "$packages" >"$stamp"
echo "arm64 sysroot: $dir ($(du -sh "$dir" | cut -f1))"
