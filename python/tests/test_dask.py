"""examples/dask/caption_dataset.py on a LocalCluster on loopback (2 worker processes, 1 thread each, no
dashboard): 40 images captioned with one model load per worker; a worker closed mid-run and the run
repeated gives every id exactly once; the merged output equals a single-process batch line for line."""
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

import numpy as np
from PIL import Image

from common import SOURCE, TINY

EXAMPLE_DIR = os.path.join(SOURCE, "examples", "dask")
# The workers import the example by name (they are fresh processes started with this environment).
os.environ["PYTHONPATH"] = EXAMPLE_DIR + os.pathsep + os.environ.get("PYTHONPATH", "")
sys.path.insert(0, EXAMPLE_DIR)

import caption_dataset  # noqa: E402
import smolvlm  # noqa: E402
from distributed import Client, wait  # noqa: E402

OPTIONS = {"max_new_tokens": 160, "split": False, "prompt": "Describe this image."}
SHARDS = 8


def read(path):
    with open(path) as f:
        return [json.loads(l) for l in f]


def strip(records):
    return [(r["id"], r.get("text"), r.get("token_ids"), r.get("error")) for r in records]


class DaskTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="smolvlm-dask-")
        images = os.path.join(cls.dir, "images")
        os.makedirs(os.path.join(images, "sub"))
        rng = np.random.default_rng(22)
        for i in range(40):
            h, w = (int(x) for x in rng.integers(24, 160, 2))
            im = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            im.save(os.path.join(images, "sub" if i % 4 == 0 else "", f"img{i:02d}.{'png' if i % 2 else 'jpg'}"))
        cls.manifest = caption_dataset.folder_manifest(images, os.path.join(cls.dir, "manifest.jsonl"))
        cls.single = os.path.join(cls.dir, "single.jsonl")
        t0 = time.perf_counter()
        smolvlm.batch(cls.manifest, cls.single, smolvlm.Model(TINY, threads=1), progress=False, **OPTIONS)
        cls.single_seconds = time.perf_counter() - t0
        cls.cluster = caption_dataset.start_cluster(2)
        cls.client = Client(cls.cluster)
        cls.client.register_worker_plugin(caption_dataset.ModelPlugin(TINY, 1), name=caption_dataset.ModelPlugin.name)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.cluster.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_1_run_equals_single_process_batch(self):
        self.assertEqual(len(read(self.manifest)), 40)
        out = os.path.join(self.dir, "run1")
        report = caption_dataset.run(self.client, self.manifest, out, SHARDS, OPTIONS)
        self.assertEqual(report["merged"], {"written": 40, "missing": 0, "duplicates": 0})
        self.assertEqual(report["written_this_run"], 40)
        merged = read(os.path.join(out, "results.jsonl"))
        self.assertEqual(strip(merged), strip(read(self.single)))
        self.assertFalse(any("error" in r for r in merged))
        # one model per worker process, loaded once, however many tasks it ran
        self.assertEqual(list(report["model_loads"].values()), [1, 1])
        self.assertGreater(len(report["tasks"]), len(report["model_loads"]))
        print(f"\n40 images: 1 process {40 / self.single_seconds:.1f} images/s, 2 dask workers "
              f"{report['items_per_s']:.1f} images/s")

    def test_2_worker_closed_mid_run_then_rerun(self):
        out = os.path.join(self.dir, "run2")
        os.makedirs(out)
        futures = caption_dataset.submit_shards(self.client, self.manifest, out, SHARDS, OPTIONS)
        paths = caption_dataset.shard_paths(out, SHARDS)
        deadline = time.time() + 60
        while time.time() < deadline and sum(os.path.exists(p) and os.path.getsize(p) > 0 for p in paths) < 2:
            time.sleep(0.01)
        lines_before = sum(len(read(p)) for p in paths if os.path.exists(p))
        name = sorted(self.cluster.workers)[0]
        self.cluster.sync(self.cluster.workers[name].close)
        wait(futures, timeout=120)
        self.assertLess(lines_before, 40, "the run finished before a worker was closed")
        first = [f.result() for f in futures if f.status == "finished"]
        resumed = sum(t["skipped"] for t in first)
        # run again: every shard resumes; nothing is captioned twice
        report = caption_dataset.run(self.client, self.manifest, out, SHARDS, OPTIONS)
        self.assertEqual(report["merged"]["missing"], 0)
        all_lines = [r for p in paths for r in read(p)]
        ids = [r["id"] for r in all_lines]
        self.assertEqual(len(ids), 40)
        self.assertEqual(len(set(ids)), 40)
        self.assertEqual(strip(read(os.path.join(out, "results.jsonl"))), strip(read(self.single)))
        self.assertEqual(list(report["model_loads"].values()), [1])
        print(f"\nworker closed after {lines_before} of 40 lines; {len(first)} of {SHARDS} tasks finished in that run "
              f"({resumed} lines found already written by a rescheduled task); the re-run wrote "
              f"{report['written_this_run']}")

    def test_3_captioner_class(self):
        c = caption_dataset.Captioner(TINY, threads=1, max_new_tokens=OPTIONS["max_new_tokens"], split=False)
        jobs = read(self.manifest)[:3]
        out = c({"id": [j["id"] for j in jobs], "image": [j["images"][0] for j in jobs] + []})
        single = {r["id"]: r for r in read(self.single)}
        self.assertEqual(out["text"], [single[j["id"]]["text"] for j in jobs])
        self.assertEqual(out["error"], [None] * 3)
        bad = c({"image": [b"not an image"]})
        self.assertIsNone(bad["text"][0])
        self.assertIn("image", bad["error"][0])


if __name__ == "__main__":
    unittest.main()
