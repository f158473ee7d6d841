#!/usr/bin/env python3
"""Copies the HunYuan dense goldens and tiny checkpoints of shared/reference/hunyuan into the test data:
models/hunyuan-tiny-{a,b}/ (every file of the checkpoint) and goldens/hy_<case>/ (case.json with its
"model" renamed, generated_ids, and the logits in full: they are small, 1024-entry vocabulary).
Usage: copy_hunyuan.py SHARED_REFERENCE_DIR"""
import json, os, shutil, sys

def main(ref):
    here = os.path.dirname(os.path.abspath(__file__))
    src_root = os.path.join(ref, "hunyuan")
    for name in ("tiny-a", "tiny-b"):
        src = os.path.join(src_root, "models", name)
        dst = os.path.join(here, "..", "models", "hunyuan-" + name)
        os.makedirs(dst, exist_ok=True)
        for f in sorted(os.listdir(src)):
            shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))
    for case in sorted(os.listdir(os.path.join(src_root, "goldens"))):
        src = os.path.join(src_root, "goldens", case)
        dst = os.path.join(here, "hy_" + case)
        os.makedirs(dst, exist_ok=True)
        spec = json.load(open(os.path.join(src, "case.json"), encoding="utf-8"))
        spec["model"] = "models/hunyuan-" + os.path.basename(spec["model"])
        spec["reference_case"] = "hunyuan/goldens/" + case
        with open(os.path.join(dst, "case.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f, ensure_ascii=False, indent=1)
        for f in ("generated_ids.npy", "input_ids.npy", "prefill_logits_last.npy", "step_logits.npy"):
            shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))

main(sys.argv[1])
