#!/bin/sh
# Installs the Python package alone into a fresh prefix and captions with it from there, in a folder
# that knows neither the build tree nor the source tree.
# usage: install_test.sh BUILD_DIR PYTHON INSTALL_DIR(relative to the prefix) MODEL IMAGE
set -eu
build=$1 python=$2 dir=$3 model=$4 image=$5
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" --component python >/dev/null
site="$prefix/$dir"
test -f "$site/smolvlm/__init__.pyi"
cd "$prefix"
PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 "$python" - "$site" "$model" "$image" <<'PY'
import sys
import smolvlm
site, model, image = sys.argv[1:]
assert smolvlm.__file__.startswith(site), smolvlm.__file__
r = smolvlm.Model(model, threads=1).caption(image, max_new_tokens=4)
assert len(r.token_ids) == 4, r
print("installed smolvlm", smolvlm.__version__, "at", site, "->", r.token_ids)
PY
