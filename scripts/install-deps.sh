#!/usr/bin/env bash
# Installs every Debian 12 package the project needs to build, test and benchmark (on amd64 or arm64).
# Idempotent: apt-get skips what is already installed.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git ca-certificates ccache \
  clang libclang-rt-14-dev \
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev \
  libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev \
  libonig-dev libutf8proc-dev \
  libcurl4-openssl-dev libssl-dev \
  libcpp-httplib-dev chromium \
  libopenblas-dev \
  python3 python3-pil python3-numpy \
  python3-dev pybind11-dev python3-pybind11 python3-dask python3-distributed >/dev/null
# Cross-building for aarch64 and running its tests under qemu (scripts/arm64-test.sh), from x86-64.
if [ "$(dpkg --print-architecture)" = amd64 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends g++-aarch64-linux-gnu qemu-user-static mmdebstrap >/dev/null
fi
# Node.js (for the reference tokenizer used by the differential tests) ships with the machine image;
# fall back to Debian's packages where it does not.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

# The reference tokenizer (HF tokenizers, Rust, through npm) for the differential tokenizer test and
# the tokenizer benchmark; pinned by tests/tools/package-lock.json.
if [ -f "$(dirname "$0")/../tests/tools/package-lock.json" ]; then
  npm ci --prefix "$(dirname "$0")/../tests/tools" --no-audit --no-fund >/dev/null
fi
# The official OpenAI client for the server tests; pinned by tests/server/package-lock.json.
if [ -f "$(dirname "$0")/../tests/server/package-lock.json" ]; then
  npm ci --prefix "$(dirname "$0")/../tests/server" --no-audit --no-fund >/dev/null
fi

# Only to regenerate reference data (not for building or testing): python3-torch for
# tests/data/perplexity/make_reference.py and tests/data/trained/train.py, bible-kjv for the trained
# model's public-domain text (tests/data/trained/make_corpus.sh). Opt in with SMOLVLM_REFERENCE_TOOLS=1.
if [ "${SMOLVLM_REFERENCE_TOOLS:-0}" = 1 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends python3-torch bible-kjv >/dev/null
fi
