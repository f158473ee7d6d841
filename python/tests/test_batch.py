"""`smolvlm batch` and smolvlm.batch on the tiny checkpoint: 200 jobs with 10 malformed lines and 5
corrupt images, kill -9 at a random point then --resume, a torn last line, shards covering the input
once, the output lock, and the Python entry point giving the CLI's lines."""
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import smolvlm
from common import BINARY, CORRUPT, FLOWER, IMAGES, TINY, cli

GOOD_IMAGES = [FLOWER] + [os.path.join(IMAGES, "odd", n) for n in ("gen_513x513.png", "gen_pal4bit.png", "gen_1024x512.jpg")]
CORRUPT_IMAGES = [os.path.join(CORRUPT, n) for n in ("garbage.bin", "trunc_header.jpg", "empty.jpg", "bad_crc.png", "zero_width.png")]
MALFORMED = [
    "not json at all",
    '{"id": "x", "images": [',
    '["an", "array"]',
    "42",
    '{"images": ["a.jpg"]}',
    '{"id": null, "prompt": "hi"}',
    '{"id": 1.5, "prompt": "hi"}',
    '{"id": {"nested": 1}, "prompt": "hi"}',
    '{"id": "job-000", "prompt": "the id of line 1 again"}',
    "{}",
]


def write_jobs(path, n_good, malformed=(), corrupt=(), seed=0):
    """n_good valid jobs; malformed lines and corrupt-image jobs spread through them. Returns the ids of
    the jobs that have one (valid and corrupt), in input order."""
    rng = random.Random(seed)
    lines, ids = [], []
    for i in range(n_good):
        job = {"id": f"job-{i:03d}", "images": [GOOD_IMAGES[i % len(GOOD_IMAGES)]], "max_new_tokens": 2 + i % 3,
               "split": False}
        if i % 7 == 3:
            job["prompt"] = f"What is in picture {i}?"
        if i % 11 == 5:
            job = {"id": i, "messages": [{"role": "user", "content": f"Say {i}."}], "max_new_tokens": 2}
        lines.append(json.dumps(job))
        ids.append(job["id"])
    for k, c in enumerate(corrupt):
        at = rng.randrange(1, len(lines))
        job = {"id": f"corrupt-{k}", "images": [c], "max_new_tokens": 2}
        lines.insert(at, json.dumps(job))
        ids.insert(at, job["id"])
    for m in malformed:
        lines.insert(rng.randrange(1, len(lines)), m)
    lines.insert(rng.randrange(1, len(lines)), "")  # a blank line is no job
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return ids


def read_output(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data == b"" or data.endswith(b"\n"), "a torn last line"
    return [json.loads(l) for l in data.decode().splitlines()]


def key(rec):
    return ("id", json.dumps(rec["id"])) if "id" in rec else ("line", rec["line"])


def run_batch(*args, check=True):
    return cli("batch", "--model", TINY, "--threads", "1", "--no-progress", *args, check=check)


class BatchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="smolvlm-batch-")
        cls.jobs = os.path.join(cls.dir, "jobs.jsonl")
        cls.ids = write_jobs(cls.jobs, 185, MALFORMED, CORRUPT_IMAGES)
        cls.full = os.path.join(cls.dir, "full.jsonl")
        t0 = time.perf_counter()
        p = run_batch("--input", cls.jobs, "--output", cls.full)
        cls.full_seconds = time.perf_counter() - t0
        cls.summary = p.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_200_jobs_15_errors(self):
        out = read_output(self.full)
        self.assertEqual(len(out), 200)
        errors = [r for r in out if "error" in r]
        self.assertEqual(len(errors), 15)
        line_errors = [r for r in errors if "line" in r]
        self.assertEqual(len(line_errors), 10)
        self.assertEqual({r["id"] for r in errors if "id" in r}, {f"corrupt-{k}" for k in range(5)})
        for r in errors:
            self.assertIn(r["error"]["code"], ("bad_input", "unsupported", "io"))
            self.assertTrue(r["error"]["message"])
        self.assertTrue(any("repeats the id of line" in r["error"]["message"] for r in line_errors))
        # every job with an id once, in input order
        self.assertEqual([r["id"] for r in out if "id" in r], self.ids)
        for r in out:
            if "error" not in r:
                self.assertEqual(set(r), {"id", "text", "token_ids", "prompt_tokens", "stopped_on_eos", "finish_reason",
                                          "timings"})
                self.assertGreaterEqual(len(r["token_ids"]), 1)
        self.assertIn("200 written (15 errors)", self.summary)
        print(f"\n200 jobs in {self.full_seconds:.2f} s ({200 / self.full_seconds:.1f} lines/s, 1 thread)")

    def test_results_equal_caption(self):
        out = {json.dumps(r["id"]): r for r in read_output(self.full) if "id" in r}
        c = json.loads(cli("caption", "--model", TINY, "--json", "--no-split", "--max-new-tokens", "2",
                           GOOD_IMAGES[0]).stdout)
        self.assertEqual(out['"job-000"']["token_ids"], c["token_ids"])
        self.assertEqual(out['"job-000"']["text"], c["text"])

    def test_kill_9_then_resume_every_id_once(self):
        out = os.path.join(self.dir, "killed.jsonl")
        target = random.Random().randrange(5, 150)
        p = subprocess.Popen([BINARY, "batch", "--model", TINY, "--threads", "1", "--no-progress", "--input", self.jobs,
                              "--output", out], stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            if os.path.exists(out) and os.path.getsize(out) > 0:
                with open(out, "rb") as f:
                    if f.read().count(b"\n") >= target:
                        break
            time.sleep(0.002)
        p.send_signal(signal.SIGKILL)
        p.wait()
        with open(out, "rb") as f:
            before = f.read().count(b"\n")
        self.assertLess(before, 200, "the batch finished before it was killed")
        p = run_batch("--input", self.jobs, "--output", out, "--resume")
        self.assertIn(f"{before} already done", p.stderr)
        recs = read_output(out)
        self.assertEqual(len(recs), 200)
        self.assertEqual(sorted(map(key, recs)), sorted(map(key, read_output(self.full))))
        print(f"\nkilled after {before} lines (target {target}); resumed to 200")

    def test_torn_last_line_is_redone(self):
        out = os.path.join(self.dir, "torn.jsonl")
        with open(self.full, "rb") as f:
            lines = f.read().splitlines(keepends=True)
        with open(out, "wb") as f:
            f.write(b"".join(lines[:50]) + lines[50][: len(lines[50]) // 2])
        run_batch("--input", self.jobs, "--output", out, "--resume")
        recs = read_output(out)
        self.assertEqual(len(recs), 200)
        self.assertEqual(len(set(map(key, recs))), 200)
        self.assertEqual([key(r) for r in recs[:50]], [key(json.loads(l)) for l in lines[:50]])

    def test_shards_cover_input_once(self):
        full = {key(r): r for r in read_output(self.full)}
        seen = []
        for i in range(3):
            out = os.path.join(self.dir, f"shard{i}.jsonl")
            run_batch("--input", self.jobs, "--output", out, "--shard", f"{i}/3")
            recs = read_output(out)
            self.assertGreater(len(recs), 30)
            for r in recs:
                if "error" not in r:
                    self.assertEqual(r["token_ids"], full[key(r)]["token_ids"])
            seen += [key(r) for r in recs]
        self.assertEqual(len(seen), 200)
        self.assertEqual(set(seen), set(full))
        merged = os.path.join(self.dir, "merged.jsonl")
        parts = [os.path.join(self.dir, f"shard{i}.jsonl") for i in (2, 0, 1)]
        self.assertEqual(smolvlm.merge_batch(self.jobs, parts, merged), {"written": 200, "missing": 0, "duplicates": 0})
        strip = lambda r: {k: v for k, v in r.items() if k != "timings"}
        self.assertEqual([strip(r) for r in read_output(merged)], [strip(r) for r in read_output(self.full)])
        s = smolvlm.merge_batch(self.jobs, parts[:2] + parts[:1], merged)
        self.assertGreater(s["missing"], 0)
        self.assertGreater(s["duplicates"], 0)

    def test_refusals(self):
        out = os.path.join(self.dir, "locked.jsonl")
        with open(out, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            p = run_batch("--input", self.jobs, "--output", out, "--resume", check=False)
        self.assertEqual(p.returncode, 5)
        self.assertIn("another process is writing", p.stderr)
        p = run_batch("--input", self.jobs, "--output", self.full, check=False)
        self.assertEqual(p.returncode, 3)
        self.assertIn("already holds results", p.stderr)
        for shard in ("3/3", "1/0", "x", "-1/2", "1/2/3"):
            self.assertEqual(run_batch("--input", self.jobs, "--output", out, "--shard", shard, check=False).returncode, 2)
        p = run_batch("--input", os.path.join(self.dir, "missing.jsonl"), "--output", out, check=False)
        self.assertEqual(p.returncode, 5)
        self.assertIn("missing.jsonl", p.stderr)

    def test_progress_bar(self):
        small = os.path.join(self.dir, "progress.jsonl")
        write_jobs(small, 12)
        p = cli("batch", "--model", TINY, "--input", small, "--output", os.path.join(self.dir, "progress_out.jsonl"),
                "--progress")
        self.assertRegex(p.stderr, r"\[#+\] 12/12, 0 errors, [0-9.]+ items/s, ETA 0:00")
        p = cli("batch", "--model", TINY, "--input", small, "--output", os.path.join(self.dir, "progress_out2.jsonl"))
        self.assertNotIn("ETA", p.stderr)  # not a terminal

    def test_python_batch_equals_cli(self):
        small = os.path.join(self.dir, "small.jsonl")
        write_jobs(small, 30, MALFORMED[:3], CORRUPT_IMAGES[:2], seed=1)
        cli_out = os.path.join(self.dir, "small_cli.jsonl")
        run_batch("--input", small, "--output", cli_out)
        m = smolvlm.Model(TINY, threads=1)
        py_out = os.path.join(self.dir, "small_py.jsonl")
        s = smolvlm.batch(small, py_out, m, progress=False)
        self.assertEqual((s["lines"], s["done"], s["errors"], s["skipped"]), (35, 35, 5, 0))
        strip = lambda r: {k: v for k, v in r.items() if k != "timings"}
        self.assertEqual([strip(r) for r in read_output(py_out)], [strip(r) for r in read_output(cli_out)])
        again = smolvlm.batch(small, py_out, m, resume=True)
        self.assertEqual((again["skipped"], again["done"]), (35, 0))
        with self.assertRaises(smolvlm.BadInputError):
            smolvlm.batch(small, py_out, m)
        parts = [os.path.join(self.dir, f"small_py{i}.jsonl") for i in range(2)]
        n = sum(smolvlm.batch(small, parts[i], m, shard=f"{i}/2")["done"] for i in range(2))
        self.assertEqual(n, 35)


if __name__ == "__main__":
    unittest.main()
