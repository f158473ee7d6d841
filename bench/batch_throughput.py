#!/usr/bin/python3
"""Images/s of `smolvlm batch` in one process against the same jobs on 2 Dask worker processes, and the
per-image time of Model.caption, on one model.

    PYTHONPATH=build/python bench/batch_throughput.py --model DIR [--images 40] [--max-new-tokens 32]
        [--split] [--binary build/smolvlm] [--json]

The images are random (seeded) RGB images of 64-320 px a side. Rows: the CLI's `batch` with every core
(--threads = cores) and with 1 thread; `examples/dask/caption_dataset.py`'s run on a LocalCluster of 2
workers x 1 thread (1 engine thread each; its figure excludes starting the cluster and loading the
models); Model.caption in a loop (every core). The ceiling of the Dask figure is twice the 1-thread batch
rate measured in the same run (2 workers, each at best as fast as one 1-thread process)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "dask"))
os.environ["PYTHONPATH"] = os.path.join(HERE, "..", "examples", "dask") + os.pathsep + os.environ.get("PYTHONPATH", "")

import caption_dataset  # noqa: E402
import smolvlm  # noqa: E402


def make_images(folder, n, seed=0):
    rng = np.random.default_rng(seed)
    for i in range(n):
        h, w = (int(x) for x in rng.integers(64, 320, 2))
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(os.path.join(folder, f"img{i:03d}.png"))


def cli_batch(binary, model, manifest, out, threads, opts):
    args = [binary, "batch", "--model", model, "--input", manifest, "--output", out, "--threads", str(threads),
            "--no-progress", "--max-new-tokens", str(opts["max_new_tokens"])]
    if not opts.get("split", True):
        args.append("--no-split")
    t0 = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(p.stderr)
    # the batch's own time (after the model load), from its summary line
    inner = float(p.stderr.rsplit(" in ", 1)[1].split(" s,")[0])
    return wall, inner


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--images", type=int, default=40)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--split", action="store_true", help="split images into tiles (default: one tile each)")
    ap.add_argument("--binary", default=os.path.join(HERE, "..", "build", "smolvlm"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    cores = os.cpu_count()
    opts = {"max_new_tokens": a.max_new_tokens, "split": a.split}
    tmp = tempfile.mkdtemp(prefix="smolvlm-bench-")
    try:
        images = os.path.join(tmp, "images")
        os.makedirs(images)
        make_images(images, a.images)
        manifest = caption_dataset.folder_manifest(images, os.path.join(tmp, "manifest.jsonl"))
        rows = {}
        for threads in (cores, 1):
            wall, inner = cli_batch(a.binary, a.model, manifest, os.path.join(tmp, f"batch{threads}.jsonl"), threads, opts)
            rows[f"batch_{threads}_threads"] = {"seconds": inner, "wall_s": wall, "images_per_s": a.images / inner}

        from distributed import Client
        cluster = caption_dataset.start_cluster(2)
        client = Client(cluster)
        t0 = time.perf_counter()
        client.register_worker_plugin(caption_dataset.ModelPlugin(a.model, 1), name=caption_dataset.ModelPlugin.name)
        load_s = time.perf_counter() - t0
        report = caption_dataset.run(client, manifest, os.path.join(tmp, "dask"), 8, opts)
        client.close()
        cluster.close()
        rows["dask_2_workers_x_1_thread"] = {"seconds": report["seconds"], "images_per_s": report["items_per_s"],
                                             "model_load_s": load_s, "loads": sorted(report["model_loads"].values())}
        with open(os.path.join(tmp, "dask", "results.jsonl")) as f, open(os.path.join(tmp, "batch1.jsonl")) as g:
            same = [(r["id"], r.get("token_ids")) for r in map(json.loads, f)] == \
                   [(r["id"], r.get("token_ids")) for r in map(json.loads, g)]
        rows["dask_2_workers_x_1_thread"]["equals_batch"] = same

        m = smolvlm.Model(a.model, threads=cores)
        paths = sorted(os.path.join(images, n) for n in os.listdir(images))
        m.caption(paths[0], max_new_tokens=2, split=a.split)
        per = []
        for p in paths:
            t0 = time.perf_counter()
            m.caption(p, max_new_tokens=a.max_new_tokens, split=a.split)
            per.append(time.perf_counter() - t0)
        rows["caption_loop"] = {"mean_s": float(np.mean(per)), "median_s": float(np.median(per)),
                                "images_per_s": len(per) / sum(per)}
        ceiling = 2 * rows["batch_1_threads"]["images_per_s"]
        rows["dask_2_workers_x_1_thread"]["of_ceiling"] = rows["dask_2_workers_x_1_thread"]["images_per_s"] / ceiling
        out = {"model": a.model, "images": a.images, "cores": cores, **opts, "rows": rows}
        if a.json:
            print(json.dumps(out, indent=1))
        else:
            for k, v in rows.items():
                print(k, {x: (round(y, 3) if isinstance(y, float) else y) for x, y in v.items()})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
