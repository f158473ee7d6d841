#!/usr/bin/env bash
# Cross-builds for aarch64 (cmake/aarch64-linux-gnu.cmake, the sysroot cached in build-arm64/sysroot)
# and proves the build exact under qemu user-mode on every kernel path it has (scalar and neon): the
# kernel tests (ops table, products, paths), every golden case (ids, fp32 logits within 1e-4, 1 and 2
# threads bitwise), one HY-MT golden quantized three ways (q8, q4, lut4: the exact quantized products
# against the dequantized model), tokenizer and preprocessing goldens, and `smolvlm check`. Emulation
# is slow, so only the targets and cases of this list are built and run; timings under qemu mean nothing and the
# timing tests (Ceilings.*) are left out.
#   scripts/arm64-test.sh [BUILD_DIR]     (default build-arm64)
# On the 2-core CI machine, from a clean clone without ccache: 252 s in all (sysroot, cold cross build
# of these targets, 132 cases: 114 run, the 18 x86-path cases skipped, 75 s; `smolvlm check` 4 s).
# ccache, where installed, makes a rebuild quicker.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-arm64}
sysroot=$(realpath -m "$build/sysroot")
./scripts/arm64-sysroot.sh "$sysroot"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DSMOLVLM_SYSROOT="$sysroot" -DSMOLVLM_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" --target smolvlm_cli test_kernels test_model test_text test_image
file "$build/smolvlm"
file "$build/smolvlm" | grep -q 'ARM aarch64'

cases='^(Paths/|Linear|KernelPath|ScopedKernelPath|ThreadPoolKernelPath|Quant\.|Int8Rows\.|Int8Gemv\.|FastPrecision\.'
cases+='|Ops\.|Goldens/GoldenCase\.'
cases+='|Goldens/QuantGolden\.ExactToItsDequantizedSelfOnEveryPath/(q8|q4|lut4)_hy_a_en_zh'
cases+='|Reference/(CorpusTest|ChatCases)\..*/(smolvlm|gpt2)( |$)'
cases+='|Idefics3\.(ModelGoldensPixelValues|EveryKernelPathGivesTheSameTensors)|Resample\.EveryKernelPath)'
ctest --test-dir "$build" --no-tests=error --output-on-failure -j2 -R "$cases" -E '^Ceilings'

# The emulated CPU above has dotprod, so the neon path's pools took the sdot products; the Armv8.0
# ones (smull) ran there by themselves. On a CPU without dotprod the pools take those.
# Each run under a time limit (far above its seconds), so that a hang fails the stage instead of
# stalling CI.
timeout 600 qemu-aarch64-static -cpu cortex-a57 -L "$sysroot" "$build/tests/test_kernels" --gtest_brief=1 \
  --gtest_filter='Int8Rows.*:Int8Gemv.*:FastPrecision.*' || { echo "Armv8.0 kernel tests failed or hung" >&2; exit 1; }

# `smolvlm check` runs every path the (emulated) CPU has and must name neon among them.
timeout 600 "$build/smolvlm-emulated" check | tee "$build/check.txt" || { echo "smolvlm check failed or hung" >&2; exit 1; }
grep -q 'kernel paths run: scalar, neon' "$build/check.txt" || { echo "smolvlm check did not run the neon path" >&2; exit 1; }
