#!/usr/bin/env python3
"""Splits a model folder's model.safetensors into HF-style shards (model-0000k-of-0000n.safetensors +
model.safetensors.index.json) so that no test-data file exceeds the repository's size budget. Tensor
bytes, dtypes, shapes and the header metadata are unchanged; tensors keep their file order.
Usage: tests/data/models/shard_checkpoint.py FOLDER [MAX_SHARD_BYTES]   (removes model.safetensors)"""
import json
import os
import struct
import sys

folder = sys.argv[1]
limit = int(sys.argv[2]) if len(sys.argv) > 2 else 7 * 1024 * 1024
src = os.path.join(folder, "model.safetensors")
with open(src, "rb") as f:
    blob = f.read()
(header_len,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8:8 + header_len])
data = blob[8 + header_len:]
metadata = header.pop("__metadata__", None)
names = sorted(header, key=lambda n: header[n]["data_offsets"][0])

shards, current, size = [], [], 0
for n in names:
    b, e = header[n]["data_offsets"]
    if current and size + (e - b) > limit:
        shards.append(current)
        current, size = [], 0
    current.append(n)
    size += e - b
shards.append(current)

weight_map, total = {}, 0
for i, shard in enumerate(shards):
    fname = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
    h, chunks, off = {}, [], 0
    if metadata is not None:
        h["__metadata__"] = metadata
    for n in shard:
        b, e = header[n]["data_offsets"]
        h[n] = {"dtype": header[n]["dtype"], "shape": header[n]["shape"], "data_offsets": [off, off + e - b]}
        chunks.append(data[b:e])
        off += e - b
        weight_map[n] = fname
        total += e - b
    hb = json.dumps(h, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)  # data starts 8-byte aligned
    with open(os.path.join(folder, fname), "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + b"".join(chunks))
with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
    f.write("\n")
os.remove(src)
print("%s: %d shards, %d tensor bytes" % (folder, len(shards), total))
