#!/usr/bin/python3
"""Makes llama-tiny-padded/: llama-tiny with its (tied) embedding padded past the tokenizer, as real
checkpoints pad theirs to a multiple of 64 or 128 rows. 49280 rows become 49344; the tokenizer still
ends at id 49279. Row 49300 is twice the row of 29466, the first greedy token of llama-tiny after
"The capital of France is": that prompt then makes the model generate 49300 first, an id the
tokenizer cannot print (HF keeps it in the ids and decodes it to nothing). The other new rows are zero.

    /usr/bin/python3 tests/data/models/make_padded_vocab.py    (Debian's python3-numpy)
"""
import json
import os
import shutil
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC, DST = os.path.join(HERE, "llama-tiny"), os.path.join(HERE, "llama-tiny-padded")
ROWS, PADDED_ID, COPIED_ID = 49344, 49300, 29466


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", name
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(t["shape"])
    return out


def write_safetensors(path, tensors):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def main():
    os.makedirs(DST, exist_ok=True)
    tensors = read_safetensors(os.path.join(SRC, "model.safetensors"))
    embed = tensors["model.embed_tokens.weight"]
    padded = np.zeros((ROWS, embed.shape[1]), dtype=np.float32)
    padded[: embed.shape[0]] = embed
    padded[PADDED_ID] = 2 * embed[COPIED_ID]
    tensors["model.embed_tokens.weight"] = padded
    write_safetensors(os.path.join(DST, "model.safetensors"), dict(sorted(tensors.items())))
    with open(os.path.join(SRC, "config.json")) as f:
        config = json.load(f)
    config["vocab_size"] = ROWS
    with open(os.path.join(DST, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    shutil.copyfile(os.path.join(SRC, "generation_config.json"), os.path.join(DST, "generation_config.json"))
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        link = os.path.join(DST, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join("..", "llama-tiny", name), link)


if __name__ == "__main__":
    main()
