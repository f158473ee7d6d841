#!/usr/bin/env bash
# The installed engine, used the way an outside project uses it: `cmake --install` into a fresh
# prefix, then examples/c/caption.c built in a folder that knows only that prefix, once with
# pkg-config (shared) and once with find_package(smolvlm) (shared and static), each run on the tiny
# checkpoint: every build must print exactly the token ids `smolvlm caption --json` gives.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/smolvlm.h"
libdir=$(dirname "$(find "$prefix" -name 'libsmolvlm.so.*' -type f | head -1)")
test -n "$libdir"
readelf -d "$libdir"/libsmolvlm.so.*.*.* | grep -q 'SONAME.*libsmolvlm.so.0.4\]'
# Only the C API is exported.
if nm -D --defined-only "$libdir/libsmolvlm.so" | awk '{print $3}' | grep -v '^smolvlm_' | grep -v '^_' | grep -q .; then
  echo "libsmolvlm.so exports symbols outside the C API:" >&2
  nm -D --defined-only "$libdir/libsmolvlm.so" | awk '{print $3}' | grep -v '^smolvlm_' | head >&2
  exit 1
fi

model=$src/tests/data/models/smolvlm-tiny
image=$src/tests/data/image/model_images/tiny.png
expected=$("$build/smolvlm" caption --json --model "$model" "$image" --max-new-tokens 256 |
  /usr/bin/python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["token_ids"])))')
test -n "$expected"

mkdir -p "$work/out"
cp "$src/examples/c/caption.c" "$work/out/"
cd "$work/out"
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c11 -Wall -Werror caption.c $(pkg-config --cflags --libs smolvlm) -o caption_pkgconfig

cat > CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(caption_example C)
find_package(smolvlm REQUIRED)
add_executable(caption_cmake caption.c)
target_link_libraries(caption_cmake PRIVATE smolvlm::smolvlm)
add_executable(caption_cmake_static caption.c)
target_link_libraries(caption_cmake_static PRIVATE smolvlm::smolvlm_static)
CMAKE
cmake -S . -B build -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build >/dev/null

status=0
for exe in ./caption_pkgconfig build/caption_cmake build/caption_cmake_static; do
  got=$(LD_LIBRARY_PATH=$libdir SMOLVLM_PRINT_IDS=1 "$exe" "$model" "$image" 2>&1 >/dev/null)
  if [ "$got" = "$expected" ]; then
    echo "$exe: the same $(wc -w <<<"$got") ids as smolvlm caption"
  else
    echo "$exe: ids differ: got [$got], expected [$expected]" >&2
    status=1
  fi
done
exit $status
