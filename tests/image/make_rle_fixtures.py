#!/usr/bin/env python3
"""Writes the RLE-compressed BMP fixtures (tests/data/image/rle/) and what Debian's Pillow 9.4 makes of
them (tests/data/image/rle_expected.json: the sha256 of convert("RGB") bytes, or the exception).

Pillow cannot write RLE BMPs, so the files are assembled byte by byte here: a plain encoder for the
ordinary cases and hand-written command streams for the quirks of Pillow's BmpRleDecoder (row overrun,
the four-byte delta escape, odd RLE4 absolute runs, word alignment by file offset, early end of data).

Run from the repository root with Debian's Pillow: /usr/bin/python3 tests/image/make_rle_fixtures.py
"""
import hashlib
import io
import json
import os
import struct

import PIL
from PIL import Image

OUT = os.path.join("tests", "data", "image", "rle")
PAL4 = [(10, 20, 30), (200, 0, 0), (0, 200, 0), (0, 0, 200)]
PAL16 = [((i * 53) % 256, (i * 97 + 30) % 256, (255 - i * 16) % 256) for i in range(16)]


def bmp(w, h, bits, compression, palette, data, top_down=False, colors=None, gap=0):
    """A BITMAPINFOHEADER BMP; `gap` bytes between the palette and the pixel data move the data offset."""
    ncolors = len(palette) if colors is None else colors
    pal = b"".join(bytes([b, g, r, 0]) for (r, g, b) in palette)
    offset = 14 + 40 + len(pal) + gap
    height = (2**32 - h) if top_down else h
    info = struct.pack("<IiIHHIIiiII", 40, w, 0, 1, bits, compression, len(data), 2835, 2835, ncolors, 0)
    info = info[:8] + struct.pack("<I", height) + info[12:]
    head = b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset)
    return head + info + pal + b"\0" * gap + data


def encode_rle(rows, rle4):
    """A plain encoder: runs of equal values, absolute runs otherwise, end of line, end of bitmap.
    `rows` are in file order (bottom-up unless the file is top-down)."""
    out = bytearray()
    for row in rows:
        i = 0
        while i < len(row):
            j = i
            while j < len(row) and j - i < 255 and row[j] == row[i]:
                j += 1
            if j - i >= 3 or len(row) - i < 3:
                n = j - i
                out += bytes([n, (row[i] << 4 | row[i]) if rle4 else row[i]])
                i = j
                continue
            j = i
            while j < len(row) and j - i < (254 if rle4 else 255) and not (
                    j + 2 < len(row) and row[j] == row[j + 1] == row[j + 2]):
                j += 1
            n = j - i
            if n < 3 or (rle4 and n == 3):  # too short for an absolute run: runs of one
                for v in row[i:j]:
                    out += bytes([1, (v << 4 | v) if rle4 else v])
                i = j
                continue
            chunk = row[i:j]
            if rle4:
                if n % 2:  # keep absolute runs even: Pillow drops the last pixel of odd ones
                    n -= 1
                    chunk = chunk[:-1]
                    j -= 1
                body = bytes(chunk[k] << 4 | chunk[k + 1] for k in range(0, n, 2))
            else:
                body = bytes(chunk)
            out += bytes([0, n]) + body
            if len(body) % 2:
                out += b"\0"
            i = j
        out += b"\0\0"
    out += b"\0\1"
    return bytes(out)


def pattern(w, h, ncolors):
    """Rows (top to bottom) of indices with runs, noise and stripes."""
    rows = []
    for y in range(h):
        row = []
        for x in range(w):
            if y % 5 == 0:
                v = (x // 7 + y) % ncolors
            elif y % 5 in (1, 2):
                v = (x * x + y * 3) % ncolors
            else:
                v = (x // 3 + y // 2) % ncolors
            row.append(v)
        rows.append(row)
    return rows


def fixtures():
    f = {}
    rows = pattern(37, 23, 16)
    f["rle8_bottomup.bmp"] = bmp(37, 23, 8, 1, PAL16, encode_rle(rows[::-1], False))
    f["rle8_topdown.bmp"] = bmp(37, 23, 8, 1, PAL16, encode_rle(rows, False), top_down=True)
    f["rle4_bottomup.bmp"] = bmp(37, 23, 4, 2, PAL16, encode_rle(rows[::-1], True))
    f["rle4_topdown.bmp"] = bmp(37, 23, 4, 2, PAL16, encode_rle(rows, True), top_down=True)
    # Indices past a 4-entry palette read as the default grey ramp.
    rows9 = pattern(29, 11, 256)
    f["rle8_short_palette.bmp"] = bmp(29, 11, 8, 1, PAL4, encode_rle(rows9[::-1], False))
    # A palette of greys i -> (i, i, i) opens as mode L.
    f["rle8_grey.bmp"] = bmp(29, 11, 8, 1, [(i, i, i) for i in range(64)],
                             encode_rle([[v % 64 for v in r] for r in rows9[::-1]], False))
    # 1-bit header with RLE8 data (Pillow decodes by compression, not by depth).
    f["rle8_bits1.bmp"] = bmp(6, 2, 1, 1, PAL4[1:3], bytes([3, 1, 3, 0, 0, 0, 6, 1, 0, 0, 0, 1]))
    # RLE4 compression in an 8-bit header.
    f["rle4_bits8.bmp"] = bmp(5, 2, 8, 2, PAL16, bytes([5, 0x3A, 0, 0, 0, 4, 0x12, 0x34, 0, 0, 1, 0xF0, 0, 1]))
    # A delta escape: Pillow skips two bytes and reads (right, up) from the next two.
    f["rle8_delta.bmp"] = bmp(8, 4, 8, 1, PAL16, bytes([2, 5, 0, 2, 0xEE, 0xEE, 3, 1, 4, 9, 0, 0, 8, 7,
                                                         0, 2, 0, 0, 2, 0, 0, 0, 0, 1]))
    # An absolute run crosses the row end and shifts the next row; an encoded run is cut at the row end.
    f["rle8_overrun.bmp"] = bmp(5, 3, 8, 1, PAL16, bytes([0, 7, 1, 2, 3, 4, 5, 6, 7, 0, 9, 8, 0, 0,
                                                           7, 9, 0, 0, 0, 1]))
    # RLE4 absolute run of 3: Pillow keeps 3 // 2 bytes (2 pixels), the word alignment skips the rest.
    f["rle4_abs_odd.bmp"] = bmp(4, 2, 4, 2, PAL16, bytes([0, 3, 0x5A, 0xB0, 1, 0xCC, 0, 0, 4, 0x12, 0, 1]))
    # Word alignment is of the file offset: an odd data offset moves where the next command is read.
    f["rle8_odd_offset.bmp"] = bmp(4, 1, 8, 1, PAL16, bytes([0, 3, 1, 2, 3, 2, 5, 0, 1]), gap=1)
    # Data after the last pixel (and no end of bitmap) is ignored. Runs do not wrap: an end of line
    # resets the column.
    f["rle8_trailing.bmp"] = bmp(3, 2, 8, 1, PAL16, bytes([3, 1, 0, 0, 3, 2, 9, 9, 0, 0, 0, 5]))
    # Failures: Pillow raises "not enough image data" (or an unpacking error) at load.
    f["err_rle8_truncated.bmp"] = bmp(37, 23, 8, 1, PAL16, encode_rle(rows[::-1], False)[:200])
    f["err_rle8_early_eob.bmp"] = bmp(4, 2, 8, 1, PAL4, bytes([4, 1, 0, 0, 0, 1]))
    f["err_rle8_delta_cut.bmp"] = bmp(4, 2, 8, 1, PAL4, bytes([1, 1, 0, 2, 7, 7, 1]))
    f["err_rle4_abs_cut.bmp"] = bmp(8, 1, 4, 2, PAL16, bytes([0, 8, 0x12, 0x34]))
    f["err_rle4_odd_desync.bmp"] = bmp(6, 1, 4, 2, PAL16, bytes([0, 5, 0x12, 0x31, 0x20, 0, 0, 1]))
    # Pillow opens a black-and-white 2-colour palette as mode "1" and then has no raw mode for it.
    f["err_rle8_bw.bmp"] = bmp(4, 1, 8, 1, [(0, 0, 0), (255, 255, 255)], bytes([4, 1, 0, 1]))
    # RLE with 24-bit pixels: "unknown raw mode for given image mode".
    f["err_rle24.bmp"] = bmp(2, 1, 24, 1, [], bytes([2, 1, 0, 1]), colors=0)
    return f


def main():
    assert PIL.__version__ == "9.4.0", "expected Debian's Pillow 9.4 (/usr/bin/python3)"
    os.makedirs(OUT, exist_ok=True)
    expected = []
    for name, data in fixtures().items():
        with open(os.path.join(OUT, name), "wb") as fp:
            fp.write(data)
        entry = {"file": name}
        try:
            im = Image.open(io.BytesIO(data))
            entry["mode"] = im.mode
            rgb = im.convert("RGB")
            entry["wh"] = list(rgb.size)
            entry["rgb_sha256"] = hashlib.sha256(rgb.tobytes()).hexdigest()
        except Exception as e:  # noqa: BLE001 - recording what Pillow raises is the point
            entry["exception"] = f"{type(e).__name__}: {e}"
        assert name.startswith("err_") == ("exception" in entry), (name, entry)
        if name in ("rle8_bottomup.bmp", "rle4_topdown.bmp"):  # the encoder round-trips
            want = b"".join(bytes(PAL16[v]) for row in pattern(37, 23, 16) for v in row)
            assert rgb.tobytes() == want, name
        expected.append(entry)
    with open(os.path.join("tests", "data", "image", "rle_expected.json"), "w") as fp:
        json.dump(expected, fp, indent=1)
        fp.write("\n")
    for e in expected:
        print(e["file"], e.get("mode", ""), e.get("exception", e.get("rgb_sha256", ""))[:64])


if __name__ == "__main__":
    main()
