#!/usr/bin/python3
"""Caption a folder of images (or a JSONL manifest of jobs) on a dask.distributed cluster.

    caption_dataset.py --model MODEL (--folder DIR | --manifest JOBS.jsonl) --out OUTDIR
                       [--shards N] [--workers 2] [--scheduler tcp://HOST:8786] [--prompt ...]
                       [--max-new-tokens 64] [--no-split]

One model per worker process, loaded once when the worker joins (a WorkerPlugin), never per task.
The manifest is cut into N shards by a hash of each id (smolvlm.batch's shard=(i, N)); each shard is
one task that appends to OUTDIR/shard-i-of-N.jsonl with resume=True, so a task re-run after its
worker died (Dask reschedules it), or the whole script re-run after a crash, continues where the
shard stopped and writes every id exactly once. When all shards are done they are merged into
OUTDIR/results.jsonl in the manifest's order: the same lines `smolvlm batch` writes in one process.

Without --scheduler a LocalCluster runs on this machine (loopback only, no dashboard). With one, the
manifest, the images, the model folder and OUTDIR must be at the same paths on every worker (a
shared file system), and every worker needs the smolvlm package.

Under Ray Data or Spark (not packaged on Debian) the same Captioner class below does the work:
see examples/dask/README.md.
"""
import argparse
import json
import os
import sys
import time

import smolvlm

try:  # the plugin's base where distributed is installed; Captioner needs none of it
    from distributed import WorkerPlugin
except ImportError:
    WorkerPlugin = object

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp")


# ---- the per-process model, for any engine ------------------------------------------------------------

class Captioner:
    """A callable class holding one Model: construct it once per worker process, call it per batch.

    Called with a dict of columns (Ray Data's map_batches batch format, or pandas' to_dict("list")),
    it captions batch["image"] (paths or encoded bytes) and returns the columns plus "text" and
    "error" (None where the caption succeeded)."""

    def __init__(self, model, threads=1, prompt=smolvlm.DEFAULT_PROMPT, **options):
        self.model = smolvlm.Model(model, threads=threads)
        self.prompt = prompt
        self.options = options

    def caption(self, image):
        try:
            return self.model.caption(image, self.prompt, **self.options).text, None
        except smolvlm.Error as e:
            return None, str(e)

    def __call__(self, batch):
        out = [self.caption(image) for image in batch["image"]]
        return dict(batch, text=[t for t, _ in out], error=[e for _, e in out])


# ---- Dask -------------------------------------------------------------------------------------------------

class ModelPlugin(WorkerPlugin):
    """Loads the model into each worker as it joins: worker.smolvlm_model, counted in
    worker.smolvlm_loads."""

    name = "smolvlm-model"

    def __init__(self, model, threads):
        self.model, self.threads = model, threads

    def setup(self, worker):
        worker.smolvlm_model = smolvlm.Model(self.model, threads=self.threads)
        worker.smolvlm_loads = getattr(worker, "smolvlm_loads", 0) + 1

    def teardown(self, worker):
        worker.smolvlm_model = None


def caption_shard(manifest, out_path, shard, shards, options):
    """One task: the jobs of one shard through the worker's model, appended to out_path (resumed)."""
    from distributed import get_worker

    worker = get_worker()
    model = getattr(worker, "smolvlm_model", None)
    if model is None:
        raise RuntimeError(f"worker {worker.address} has no model: the smolvlm-model plugin did not load it")
    # The same shard's earlier attempt may still hold the output's lock while its dying worker exits.
    for attempt in range(600):
        try:
            summary = smolvlm.batch(manifest, out_path, model, shard=(shard, shards), resume=True, progress=False,
                                    **options)
            return dict(summary, shard=shard, worker=worker.address)
        except smolvlm.IOError as e:
            if "another process is writing" not in str(e):
                raise
            time.sleep(0.1)
    raise TimeoutError(f"{out_path}: still locked by another process after 60 s")


def folder_manifest(folder, path):
    """A manifest with one job per image file under folder (sorted; the id is the relative path)."""
    with open(path, "w") as f:
        for root, _, files in sorted(os.walk(folder)):
            for name in sorted(files):
                if name.lower().endswith(IMAGE_SUFFIXES):
                    full = os.path.abspath(os.path.join(root, name))
                    f.write(json.dumps({"id": os.path.relpath(full, folder), "images": [full]}) + "\n")
    return path


def shard_paths(out_dir, shards):
    return [os.path.join(out_dir, f"shard-{i}-of-{shards}.jsonl") for i in range(shards)]


def submit_shards(client, manifest, out_dir, shards, options):
    """The futures of every shard's task (each may be rescheduled by Dask when its worker dies)."""
    manifest = os.path.abspath(manifest)
    return [client.submit(caption_shard, manifest, path, i, shards, options, pure=False, retries=2,
                          key=f"caption-shard-{i}-of-{shards}-{os.path.basename(out_dir)}-{time.monotonic_ns()}")
            for i, path in enumerate(shard_paths(out_dir, shards))]


def run(client, manifest, out_dir, shards, options):
    """Captions the manifest on the client's cluster; returns a report (also written to
    out_dir/report.json). Merges into out_dir/results.jsonl when every shard finished."""
    from distributed import wait

    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    futures = submit_shards(client, manifest, out_dir, shards, options)
    wait(futures)
    summaries = [f.result() for f in futures]
    seconds = time.perf_counter() - t0
    merged = smolvlm.merge_batch(manifest, shard_paths(out_dir, shards), os.path.join(out_dir, "results.jsonl"))
    done = sum(s["done"] for s in summaries)
    report = {"shards": shards, "workers": len(client.scheduler_info()["workers"]), "seconds": seconds,
              "written_this_run": done, "errors_this_run": sum(s["errors"] for s in summaries),
              "items_per_s": done / seconds if seconds > 0 else 0.0, "merged": merged, "tasks": summaries,
              "model_loads": worker_loads(client)}
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    return report


def worker_loads(client):
    """{worker address: how many times it loaded the model}."""
    return client.run(lambda dask_worker: getattr(dask_worker, "smolvlm_loads", 0))


def start_cluster(workers, threads_per_worker=1):
    """A LocalCluster of worker processes on loopback, without the dashboard."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=True, host="127.0.0.1",
                        dashboard_address=None, silence_logs=40)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="model folder or cached hub id (the same path on every worker)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--folder", help="caption every image file under this folder")
    src.add_argument("--manifest", help="a JSONL file of jobs, as `smolvlm batch --input` reads")
    ap.add_argument("--out", required=True, help="folder for the shard outputs, results.jsonl and report.json")
    ap.add_argument("--shards", type=int, default=0, help="tasks (default: 4 per worker)")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (without --scheduler)")
    ap.add_argument("--threads", type=int, default=1, help="engine threads per worker")
    ap.add_argument("--scheduler", help="address of a running dask scheduler (default: a LocalCluster)")
    ap.add_argument("--prompt", default=smolvlm.DEFAULT_PROMPT)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--no-split", action="store_true", help="one squashed tile per image")
    args = ap.parse_args(argv)

    from distributed import Client

    os.makedirs(args.out, exist_ok=True)
    manifest = args.manifest or folder_manifest(args.folder, os.path.join(args.out, "manifest.jsonl"))
    cluster = None if args.scheduler else start_cluster(args.workers)
    with Client(args.scheduler or cluster) as client:
        client.register_worker_plugin(ModelPlugin(os.path.abspath(args.model) if os.path.isdir(args.model) else args.model,
                                                  args.threads), name=ModelPlugin.name)
        shards = args.shards or 4 * max(1, len(client.scheduler_info()["workers"]))
        options = {"prompt": args.prompt, "max_new_tokens": args.max_new_tokens}
        if args.no_split:
            options["split"] = False
        report = run(client, manifest, args.out, shards, options)
    if cluster is not None:
        cluster.close()
    m = report["merged"]
    print(f"{report['written_this_run']} jobs captioned in {report['seconds']:.2f} s "
          f"({report['items_per_s']:.2f}/s) on {report['workers']} workers; {m['written']} lines in "
          f"{os.path.join(args.out, 'results.jsonl')} ({m['missing']} missing)", file=sys.stderr)
    return 0 if m["missing"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
