#!/bin/sh
# Runs the ceilings and GEMM benchmarks (2 threads and 1) and prints the tables of bench/RESULTS.md.
#   bench/run_gemm_results.sh [BUILD_DIR] [REPETITIONS]
# OpenBLAS runs twice: with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset (it picks its own kernel for
# this CPU: the ceiling) and with the environment's setting (Haswell when the environment sets none).
# Repetitions are interleaved at random, so on a shared machine a slow stretch falls on ours and on
# OpenBLAS alike instead of on whichever benchmark happened to run then.
set -eu
build=${1:-build}
reps=${2:-8}
bin="$build/bench"
out=$(mktemp -d)
"$bin/ceilings_bench" --benchmark_format=json > "$out/ceilings.json"
for t in 2 1; do
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE SMOLVLM_BENCH_THREADS=$t "$bin/gemm_bench" \
    --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true --benchmark_min_time=0.05 \
    --benchmark_format=json > "$out/t$t.json"
  OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} SMOLVLM_BENCH_THREADS=$t "$bin/gemm_bench" \
    --benchmark_filter=openblas --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
    --benchmark_min_time=0.05 \
    --benchmark_format=json > "$out/haswell_t$t.json"
done
python3 "$(dirname "$0")/gemm_results.py" "$out/ceilings.json" "$out/t2.json" "$out/t1.json" \
  t2="$out/haswell_t2.json" t1="$out/haswell_t1.json"
echo "(raw JSON in $out)" >&2
