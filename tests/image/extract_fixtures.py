#!/usr/bin/env python3
"""Copies the image reference data the tests need from shared/reference into tests/data/image.

Run from the repository root: tests/image/extract_fixtures.py [path/to/shared/reference]
Writes compact JSON (sizes and hashes only) plus the small image files; the tests never read
shared/ themselves, so a fresh clone runs them.
"""
import json
import os
import shutil
import sys

ref = sys.argv[1] if len(sys.argv) > 1 else os.path.join("..", "shared", "reference")
out = os.path.join("tests", "data", "image")
os.makedirs(out, exist_ok=True)


def copy_dir(src, dst, keep=lambda name: True):
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if keep(name) and os.path.isfile(os.path.join(src, name)):
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))


# 1. Odd images + their goldens (decode hash, stage sizes/hashes, tiles and pixel_values hashes).
copy_dir(os.path.join(ref, "images", "odd"), os.path.join(out, "odd"), lambda n: not n.endswith(".md"))
goldens = {}
for name in sorted(os.listdir(os.path.join(ref, "goldens_pre"))):
    if not name.endswith(".json") or name in ("index.json", "mode_conversions.json"):
        continue
    g = json.load(open(os.path.join(ref, "goldens_pre", name)))
    entry = {
        "file": os.path.basename(g["file"]),
        "mode": g["pil_open"]["mode"],
        "decoded_wh": [g["decoded"]["width"], g["decoded"]["height"]],
        "rgb_sha256": g["decoded"]["rgb_sha256"],
    }
    for setting in ("split", "nosplit"):
        s = g[setting]
        e = {
            "channels_first": s["hf_input_data_format"] == "channels_first",
            "resized_hw": s["resize_longest_edge"]["out_hw"],
            "resized_sha256": s["resize_longest_edge"]["u8_sha256"],
            "rows": s["rows"], "cols": s["cols"], "num_tiles": s["num_tiles"],
            "tiles_sha256": s["tiles_u8"]["sha256"],
            "per_tile_sha256": s["tiles_u8"]["per_tile_sha256"],
            "pixel_values_sha256": s["pixel_values"]["data_sha256"],
        }
        if setting == "split":
            e["vision_encoder_hw"] = s["resize_for_vision_encoder"]["out_hw"]
            e["vision_encoder_sha256"] = s["resize_for_vision_encoder"]["u8_sha256"]
        goldens[entry["file"]] = goldens.get(entry["file"], entry)
        goldens[entry["file"]][setting] = e
json.dump(goldens, open(os.path.join(out, "goldens_pre.json"), "w"), indent=0, sort_keys=True)

# 2. Resample vectors: the small source PNGs and one line per case.
rs = os.path.join(ref, "goldens_pre", "resample")
copy_dir(os.path.join(rs, "src"), os.path.join(out, "resample_src"))
vectors = json.load(open(os.path.join(rs, "vectors.json")))
cases = vectors["cases"] if isinstance(vectors, dict) else vectors
json.dump([{"filter_id": c["filter_id"], "mode": c["mode"], "src": os.path.basename(c["src"]),
            "src_wh": c["src_wh"], "src_sha256": c["src_sha256"], "dst_wh": c["dst_wh"],
            "out_sha256": c["out_sha256"]} for c in cases],
          open(os.path.join(out, "resample_vectors.json"), "w"), indent=0)

# 3. Model goldens: images and the pixel_values hash per case.
copy_dir(os.path.join(ref, "images", "model"), os.path.join(out, "model_images"))
model_cases = {}
for case in sorted(os.listdir(os.path.join(ref, "goldens"))):
    c = json.load(open(os.path.join(ref, "goldens", case, "case.json")))
    model_cases[case] = {
        "model": os.path.basename(c["model"]),
        "images": [os.path.basename(p) for p in c["images"]],
        "do_image_splitting": c["do_image_splitting"],
        "rows": c["rows"], "cols": c["cols"],
        "pixel_values_shape": c["pixel_values_shape"],
        "pixel_values_sha256": c["pixel_values_data_sha256"],
    }
json.dump(model_cases, open(os.path.join(out, "model_goldens.json"), "w"), indent=1, sort_keys=True)

# 4. Corrupt files and what the reference raises.
copy_dir(os.path.join(ref, "images", "corrupt"), os.path.join(out, "corrupt"),
         lambda n: not n.endswith(".md") and n != "expected.json")
expected = json.load(open(os.path.join(ref, "images", "corrupt", "expected.json")))
json.dump([{"file": e["file"], "exception": e["exception"], "stage": e["stage"]} for e in expected],
          open(os.path.join(out, "corrupt_expected.json"), "w"), indent=1)
print("wrote", out)
