#!/usr/bin/env python3
"""Pillow doing the same steps as BM_DecodeAndPreprocessSplit (bench/preprocess_bench.cpp):
load_image (open + exif_transpose + convert RGB), LANCZOS to the 2048 long edge, to the vision-encoder
size, 512x512 crops, the global 512x512 image, rescale + normalize to float32 [N, 3, 512, 512].
Run with Debian's Pillow: /usr/bin/python3 bench/preprocess_pillow.py [IMAGE] [REPEATS]"""
import math
import os
import sys
import time

import numpy as np
from PIL import Image, ImageOps

here = os.path.dirname(os.path.abspath(__file__))
path = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else os.path.join(here, "..", "tests", "data", "image", "odd",
                                                           "gen_4000x3000_bench.jpg")
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
L, M = 2048, 512


def run():
    t0 = time.process_time()
    img = ImageOps.exif_transpose(Image.open(path)).convert("RGB")
    t1 = time.process_time()
    w, h = img.size
    if w >= h:
        w1, h1 = L, int(L / (w / h))
        h1 += h1 % 2
    else:
        h1, w1 = L, int(L * (w / h))
        w1 += w1 % 2
    img = img.resize((w1, h1), Image.LANCZOS)
    t2 = time.process_time()
    if w1 >= h1:
        w2 = math.ceil(w1 / M) * M
        h2 = math.ceil(int(w2 / (w1 / h1)) / M) * M
    else:
        h2 = math.ceil(h1 / M) * M
        w2 = math.ceil(int(h2 * (w1 / h1)) / M) * M
    img = img.resize((w2, h2), Image.LANCZOS)
    tiles = [img.crop((c * M, r * M, (c + 1) * M, (r + 1) * M)) for r in range(h2 // M) for c in range(w2 // M)]
    tiles.append(img.resize((M, M), Image.LANCZOS))
    arr = np.stack([np.asarray(t) for t in tiles]).transpose(0, 3, 1, 2)
    pv = ((arr.astype(np.float64) * (1 / 255)).astype(np.float32) - np.float32(0.5)) / np.float32(0.5)
    t3 = time.process_time()
    return (t1 - t0, t2 - t1, t3 - t2), pv.shape


best = None
for _ in range(repeats):
    steps, shape = run()
    if best is None or sum(steps) < sum(best):
        best = steps
print(f"Pillow {Image.__version__} (CPU time): decode {best[0] * 1e3:.1f} ms, preprocess {(best[1] + best[2]) * 1e3:.1f} ms "
      f"(first resize {best[1] * 1e3:.1f} ms, the rest {best[2] * 1e3:.1f} ms), total {sum(best) * 1e3:.1f} ms "
      f"(best of {repeats}), pixel_values {shape}")
