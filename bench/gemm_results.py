#!/usr/bin/env python3
"""Turns gemm_bench / ceilings_bench JSON outputs into the markdown tables of bench/RESULTS.md.

usage: gemm_results.py ceilings.json gemm_t2.json [gemm_t1.json ...] [--haswell t2=FILE t1=FILE]
Each gemm JSON is a run with --benchmark_repetitions=N --benchmark_format=json; the table shows the
best repetition (the `max` aggregate of GFLOP/s), which is what the machine can do when it is not
shared; a busy machine lowers the mean, not the best.
"""
import json
import sys


# gemm_bench's benchmarks named operation/MxNxK, one table row per shape; the one-core kernel
# benchmark (kernel_in_cache/...) gets a line of its own.
SHAPE_PREFIXES = ("ours_bf16/", "ours_f32/", "openblas_f32/")
KERNEL_IN_CACHE = "kernel_in_cache/"


def shape_order(shape):
    """Rows in a fixed order whatever order the (interleaved) run reported them in: the GEMMs before
    the GEMVs, then by M, K and N."""
    m, n, k = (int(v) for v in shape.split("x"))
    return (m == 1, m, k, n)


def best(run_file):
    """name -> (GFLOP/s, weight GB/s or None, all counters) from the `max` aggregates."""
    out = {}
    with open(run_file) as f:
        data = json.load(f)
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "max":
            continue
        name = b["run_name"].replace("/real_time", "")
        out[name] = (b["GFLOP/s"] / 1e9 if b["GFLOP/s"] > 1e6 else b["GFLOP/s"],
                     (b["weight_GB/s"] / 1e9 if b.get("weight_GB/s", 0) > 1e6 else b.get("weight_GB/s")), b)
    return out, data["context"]


def per_cpu_second(run_file):
    """name -> GFLOP per CPU-second of the calling thread (best repetition). With one thread all the
    work runs on the calling thread, so this is the kernel's speed while it actually holds a core:
    on a shared, overloaded machine it is the figure that does not depend on the other load."""
    out = {}
    with open(run_file) as f:
        data = json.load(f)
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "min":
            continue
        name = b["run_name"].replace("/real_time", "")
        if not name.startswith(SHAPE_PREFIXES):
            continue
        m, n, k = (int(v) for v in name.split("/", 1)[1].split("x"))
        out[name] = 2.0 * m * n * k / (b["cpu_time"] * scale[b.get("time_unit", "ns")]) / 1e9
    return out


def main(argv):
    ceil_file, rest = argv[0], argv[1:]
    haswell = {}
    runs = []
    for a in rest:
        if "=" in a:
            k, v = a.split("=", 1)
            haswell[k] = v
        else:
            runs.append(a)
    with open(ceil_file) as f:
        ceil = json.load(f)
    print("### Ceilings\n")
    print("| measure | value |")
    print("|---|---|")
    for b in ceil["benchmarks"]:
        name = b["run_name"].replace("/iterations:1/real_time", "")
        if "GFLOP/s" in b:
            print(f"| {name} | {b['GFLOP/s']:.1f} GFLOP/s |")
        else:
            print(f"| {name} | {b['GB/s']:.2f} GB/s |")
    for run in runs:
        res, ctx = best(run)
        threads = ctx.get("threads", "?")
        hs = {}
        if f"t{threads}" in haswell:
            hs, _ = best(haswell[f"t{threads}"])
        print(f"\n### {threads} thread(s) — kernel path `{ctx.get('smolvlm_kernel_path')}`, "
              f"OpenBLAS `{ctx.get('openblas_config')}`\n")
        cpu = per_cpu_second(run) if threads == "1" else {}
        cpu_h = per_cpu_second(haswell[f"t{threads}"]) if threads == "1" and f"t{threads}" in haswell else {}
        print("| M×N×K | ours BF16 GFLOP/s | ours F32 GFLOP/s | OpenBLAS (own kernel) | OpenBLAS CORETYPE=Haswell "
              "| ours BF16 / OpenBLAS | ours BF16 weight GB/s |" +
              (" per CPU-second: ours BF16 / F32 / OpenBLAS / OpenBLAS Haswell |" if cpu else ""))
        print("|---|---|---|---|---|---|---|" + ("---|" if cpu else ""))
        shapes = []
        for name in res:
            if not name.startswith(SHAPE_PREFIXES):
                continue
            shape = name.split("/", 1)[1]
            if shape not in shapes:
                shapes.append(shape)
        for s in sorted(shapes, key=shape_order):
            ob = res.get(f"openblas_f32/{s}", (None,))[0]
            obh = hs.get(f"openblas_f32/{s}", (None,))[0]
            bf, bw = res.get(f"ours_bf16/{s}", (None, None))[:2]
            f32 = res.get(f"ours_f32/{s}", (None,))[0]
            fmt = lambda v: f"{v:.1f}" if v is not None else "–"
            ratio = f"{bf / ob:.2f}" if bf and ob else "–"
            row = f"| {s} | {fmt(bf)} | {fmt(f32)} | {fmt(ob)} | {fmt(obh)} | {ratio} | {fmt(bw) if bw else '–'} |"
            if cpu:
                row += (f" {fmt(cpu.get(f'ours_bf16/{s}'))} / {fmt(cpu.get(f'ours_f32/{s}'))} / "
                        f"{fmt(cpu.get(f'openblas_f32/{s}'))} / {fmt(cpu_h.get(f'openblas_f32/{s}'))} |")
            print(row)
        for name, (gflops, _, b) in res.items():
            if name.startswith(KERNEL_IN_CACHE) and b.get("fma_peak_1_core"):
                peak = b["fma_peak_1_core"]
                print(f"\n`{name}`: the micro kernel with its operands in L1/L2 on one core, {gflops:.1f} GFLOP/s: "
                      f"{gflops / peak:.0%} of one core's FMA peak measured in the same run ({peak:.1f}; "
                      f"best repetition of each).")


if __name__ == "__main__":
    main(sys.argv[1:])
