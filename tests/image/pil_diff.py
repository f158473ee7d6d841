#!/usr/bin/env python3
"""Differential test of the image module against Debian's Pillow (python3-pil, the reference's 9.4).

Random cases are generated here, computed by Pillow, and by our code through image_diff_helper; the
outputs must be byte-identical:
  * resize: random sources (1..3000 px per side, RGB and L), random targets up and down, all six filters;
  * decode: random JPEG/PNG/WebP/GIF/BMP files written by Pillow (many modes, qualities, subsamplings,
    progressive, palettes with transparency, 16-bit, EXIF orientations) read like HF load_image.
Usage: pil_diff.py --helper PATH [--resize-sources N] [--decode-cases N] [--seed S]
Exit status: 0 all identical, 1 a mismatch, 77 Pillow/numpy missing (test skipped).
"""
import argparse
import hashlib
import io
import os
import random
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    from PIL import Image, ImageOps
except ImportError:
    print("SKIP: needs Pillow and numpy (Debian python3-pil, python3-numpy) under /usr/bin/python3")
    sys.exit(77)


def log_uniform(rng, lo, hi):
    return max(lo, min(hi, int(round(lo * (hi / lo) ** rng.random()))))


def synthetic(rng, w, h, channels):
    """Noise, gradients and hard edges: every filter tap matters."""
    nrng = np.random.default_rng(rng.getrandbits(32))
    img = nrng.integers(0, 256, size=(h, w, channels), dtype=np.uint8)
    kind = rng.randrange(4)
    if kind == 1:  # smooth gradient with a little noise
        yy, xx = np.mgrid[0:h, 0:w]
        base = ((xx * 255 // max(w - 1, 1) + yy * 127 // max(h - 1, 1)) % 256).astype(np.int32)
        img = np.clip(base[..., None] + nrng.integers(-8, 9, size=(h, w, channels)), 0, 255).astype(np.uint8)
    elif kind == 2:  # checker of random block size
        b = rng.randint(1, 16)
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.where((((yy // b) + (xx // b)) % 2 == 0)[..., None], 0, 255).astype(np.uint8).repeat(channels, axis=2)
    return img


def sha(b):
    return hashlib.sha256(b).hexdigest()


def resize_cases(rng, tmp, n_sources):
    cases = []
    for s in range(n_sources):
        big = rng.random() < 0.3
        hi = 3000 if big else 300
        while True:
            w, h = log_uniform(rng, 1, hi), log_uniform(rng, 1, hi)
            if w * h <= 1_000_000:
                break
        mode = rng.choice(["RGB", "L"])
        ch = 3 if mode == "RGB" else 1
        arr = synthetic(rng, w, h, ch)
        raw = arr.tobytes()
        path = os.path.join(tmp, f"src{s}.raw")
        with open(path, "wb") as f:
            f.write(raw)
        src = Image.frombytes(mode, (w, h), raw)
        for _ in range(6):
            r = rng.random()
            if r < 0.1:
                ow, oh = w, log_uniform(rng, 1, 3000)
            elif r < 0.2:
                ow, oh = log_uniform(rng, 1, 3000), h
            elif r < 0.25:
                ow, oh = w, h
            else:
                ow, oh = log_uniform(rng, 1, 3000), log_uniform(rng, 1, 3000)
            if ow * oh > 1_500_000:
                ow, oh = max(1, ow // 4), max(1, oh // 4)
            filt = rng.randrange(6)
            expected = sha(src.resize((ow, oh), resample=filt).tobytes())
            cases.append((f"resize {path} {w} {h} {ch} {ow} {oh} {filt}", expected,
                          f"{mode} {w}x{h} -> {ow}x{oh} filter {filt}"))
    return cases


def exif_bytes(rng):
    ex = Image.Exif()
    ex[0x0112] = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9])
    return ex.tobytes()


def random_encoded(rng):
    """One random file written by Pillow: (bytes, extension, description)."""
    w, h = log_uniform(rng, 1, 600), log_uniform(rng, 1, 600)
    fmt = rng.choice(["JPEG", "JPEG", "PNG", "PNG", "WEBP", "GIF", "BMP"])
    opts = {}
    rgb = Image.fromarray(synthetic(rng, w, h, 3), "RGB")
    if fmt == "JPEG":
        mode = rng.choice(["RGB", "RGB", "L", "CMYK"])
        im = rgb.convert(mode)
        opts = dict(quality=rng.randint(1, 100), progressive=rng.random() < 0.3, optimize=rng.random() < 0.3)
        if mode == "RGB":
            opts["subsampling"] = rng.choice([0, 1, 2])
        if rng.random() < 0.4:
            opts["exif"] = exif_bytes(rng)
    elif fmt == "PNG":
        mode = rng.choice(["1", "L", "LA", "P", "RGB", "RGBA", "I;16"])
        if mode == "P":
            im = rgb.quantize(colors=rng.choice([2, 4, 16, 100, 256]))
            if rng.random() < 0.5:
                opts["transparency"] = rng.randrange(2)
        elif mode == "RGBA":
            a = Image.fromarray(synthetic(rng, w, h, 1)[..., 0], "L")
            im = rgb.copy()
            im.putalpha(a)
        elif mode == "LA":
            im = rgb.convert("RGBA").convert("LA")
        elif mode == "I;16":
            arr = (np.asarray(rgb.convert("L"), dtype=np.uint16) * rng.choice([1, 3, 257])).astype("<u2")
            im = Image.frombytes("I;16", (w, h), arr.tobytes())
        else:
            im = rgb.convert(mode)
        opts = dict(optimize=rng.random() < 0.3)
        if rng.random() < 0.3:
            opts["exif"] = exif_bytes(rng)
    elif fmt == "WEBP":
        im = rgb if rng.random() < 0.5 else rgb.convert("RGBA")
        opts = dict(lossless=rng.random() < 0.4, quality=rng.randint(0, 100))
        if rng.random() < 0.4:
            opts["exif"] = exif_bytes(rng)
    elif fmt == "GIF":
        im = rgb.quantize(colors=rng.choice([2, 16, 64, 256])) if rng.random() < 0.8 else rgb.convert("L")
        if rng.random() < 0.4:
            opts["transparency"] = 0
    else:
        im = rgb.convert(rng.choice(["1", "L", "P", "RGB", "RGBA"]))
    buf = io.BytesIO()
    im.save(buf, format=fmt, **opts)
    return buf.getvalue(), fmt.lower(), f"{fmt} {im.mode} {w}x{h} {sorted(k for k in opts)}"


def decode_cases(rng, tmp, n):
    cases = []
    for i in range(n):
        while True:
            try:
                data, ext, desc = random_encoded(rng)
                break
            except OSError:  # a few option mixes Pillow cannot write (e.g. tiny optimized JPEGs)
                continue
        path = os.path.join(tmp, f"dec{i}.{ext}")
        with open(path, "wb") as f:
            f.write(data)
        ref = ImageOps.exif_transpose(Image.open(path)).convert("RGB")  # = HF load_image
        cases.append((f"decode {path}", f"{sha(ref.tobytes())} {ref.width}x{ref.height}", desc))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helper", required=True)
    ap.add_argument("--resize-sources", type=int, default=300, help="sources; 6 resizes each")
    ap.add_argument("--decode-cases", type=int, default=500)
    ap.add_argument("--seed", type=int, default=20261130)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="pil_diff_") as tmp:
        cases = resize_cases(rng, tmp, args.resize_sources) + decode_cases(rng, tmp, args.decode_cases)
        manifest = os.path.join(tmp, "manifest.txt")
        with open(manifest, "w") as f:
            f.write("\n".join(c[0] for c in cases) + "\n")
        t1 = time.time()
        out = subprocess.run([args.helper, manifest], capture_output=True, text=True, check=True).stdout.splitlines()
        t2 = time.time()
    if len(out) != len(cases):
        print(f"helper returned {len(out)} lines for {len(cases)} cases")
        return 1
    bad = [(c, o) for c, o in zip(cases, out) if o != c[1]]
    n_resize = sum(c[0].startswith("resize") for c in cases)
    print(f"{len(cases) - len(bad)}/{len(cases)} identical ({n_resize} resizes, {len(cases) - n_resize} decodes); "
          f"Pillow+generation {t1 - t0:.1f}s, ours {t2 - t1:.1f}s")
    for (line, expected, desc), got in bad[:20]:
        print(f"MISMATCH {desc}: {line}\n  pillow {expected}\n  ours   {got}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
