#!/usr/bin/env python3
"""Copies the model goldens of shared/reference (goldens/ and goldens_more/) into this folder in
compact form: inputs (case.json, pixel_values as u8 + LUT), the small stage outputs in full
(vision_last_hidden, image_hidden_states, generated_ids, step logits top-32 + probe), and the
last-position prefill logits reduced to the same top-32 + probe form. Full arrays are only hashed
(case.json) and, when shared/ is present, compared directly by the tests.
Usage: compact.py SHARED_REFERENCE_DIR  (no numpy needed)"""
import json, os, shutil, struct, sys, ast

KEEP = ["case.json", "pixel_values_u8.npy", "pixel_values_lut.npy", "vision_last_hidden.npy",
        "image_hidden_states.npy", "generated_ids.npy", "step_logits_topk_ids.npy",
        "step_logits_topk_values.npy", "step_logits_probe.npy"]

def read_npy(path):
    b = open(path, "rb").read()
    assert b[:6] == b"\x93NUMPY"
    major = b[6]
    hlen = struct.unpack("<H", b[8:10])[0] if major == 1 else struct.unpack("<I", b[8:12])[0]
    start = 10 if major == 1 else 12
    header = ast.literal_eval(b[start:start + hlen].decode("latin1"))
    return header, b[start + hlen:]

def write_npy(path, descr, shape, data):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % s for s in shape) if len(shape) != 1 else "%d," % shape[0])
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data)

def copy_c_order(src, dst):
    """Copies an .npy file, rewriting Fortran-order 2-D data (strided slices numpy saved as such) in C order."""
    if not src.endswith(".npy"):
        shutil.copyfile(src, dst)
        return
    header, raw = read_npy(src)
    if not header["fortran_order"]:
        shutil.copyfile(src, dst)
        return
    rows, cols = header["shape"]
    size = int(header["descr"][2:])
    out = bytearray(len(raw))
    for r in range(rows):
        for c in range(cols):
            out[(r * cols + c) * size:(r * cols + c + 1) * size] = raw[(c * rows + r) * size:(c * rows + r + 1) * size]
    write_npy(dst, header["descr"], [rows, cols], bytes(out))

def compact_prefill(src, dst):
    header, raw = read_npy(os.path.join(src, "prefill_logits_last.npy"))
    assert header["descr"] == "<f4"
    v = struct.unpack("<%df" % (len(raw) // 4), raw)
    top = sorted(range(len(v)), key=lambda i: (-v[i], i))[:32]
    write_npy(os.path.join(dst, "prefill_topk_ids.npy"), "<i8", [32], struct.pack("<32q", *top))
    write_npy(os.path.join(dst, "prefill_topk_values.npy"), "<f4", [32], struct.pack("<32f", *[v[i] for i in top]))
    probe = v[0:len(v):61]
    write_npy(os.path.join(dst, "prefill_probe.npy"), "<f4", [len(probe)], struct.pack("<%df" % len(probe), *probe))

def main(ref):
    here = os.path.dirname(os.path.abspath(__file__))
    for group in ("goldens", "goldens_more"):
        for case in sorted(os.listdir(os.path.join(ref, group))):
            src = os.path.join(ref, group, case)
            if not os.path.isdir(src):
                continue
            dst = os.path.join(here, case)
            os.makedirs(dst, exist_ok=True)
            for name in KEEP:
                if os.path.exists(os.path.join(src, name)):
                    copy_c_order(os.path.join(src, name), os.path.join(dst, name))
            if os.path.exists(os.path.join(src, "prefill_logits_last.npy")):
                compact_prefill(src, dst)

main(sys.argv[1])
