#!/usr/bin/python3
"""Trains the small Llama of the README's accuracy table (Debian's python3 + python3-torch, CPU).

  tests/data/trained/make_corpus.sh /tmp/kjv        # text from Debian's bible-kjv (public domain)
  /usr/bin/python3 tests/data/trained/train.py /tmp/kjv/train_ids.json tests/data/trained/kjv-llama

train_ids.json holds the training text tokenized by `smolvlm tokenize` with the SmolVLM tokenizer
({"ids": [...]}). The model: LlamaForCausalLM, hidden 64, 2 layers, 4 heads (2 kv), MLP 172 (not a
multiple of 64: a short last q4 group), tied embeddings, 49,280-token vocabulary; AdamW, fixed seed.
Weights are written as BF16 safetensors with HF's tensor names; torch.use_deterministic_algorithms.
"""
import json
import os
import struct
import sys
import time

import numpy as np
import torch

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
V, H, L, NH, NKV, I, D = 49280, 64, 2, 4, 2, 172, 16
CTX, BATCH, STEPS, LR = 128, 8, int(os.environ.get("STEPS", "160")), 5e-3
EPS, THETA = 1e-5, 10000.0


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(H, NH * D, bias=False)
        self.k = torch.nn.Linear(H, NKV * D, bias=False)
        self.v = torch.nn.Linear(H, NKV * D, bias=False)
        self.o = torch.nn.Linear(NH * D, H, bias=False)
        self.gate = torch.nn.Linear(H, I, bias=False)
        self.up = torch.nn.Linear(H, I, bias=False)
        self.down = torch.nn.Linear(I, H, bias=False)
        self.n1 = torch.nn.Parameter(torch.ones(H))
        self.n2 = torch.nn.Parameter(torch.ones(H))


def rms(x, g):
    return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, H)
        torch.nn.init.normal_(self.embed.weight, std=0.02)
        self.layers = torch.nn.ModuleList([Layer() for _ in range(L)])
        self.norm = torch.nn.Parameter(torch.ones(H))
        inv = 1.0 / (THETA ** (torch.arange(0, D, 2).float() / D))
        f = torch.outer(torch.arange(CTX).float(), inv)
        e = torch.cat((f, f), -1)
        self.register_buffer("cos", e.cos())
        self.register_buffer("sin", e.sin())

    def forward(self, ids):
        B, T = ids.shape
        x = self.embed(ids)
        cos, sin = self.cos[:T], self.sin[:T]
        rot = lambda t: torch.cat((-t[..., D // 2:], t[..., : D // 2]), -1)
        mask = torch.full((T, T), float("-inf")).triu(1)
        for l in self.layers:
            h = rms(x, l.n1)
            q = l.q(h).view(B, T, NH, D).transpose(1, 2)
            k = l.k(h).view(B, T, NKV, D).transpose(1, 2)
            v = l.v(h).view(B, T, NKV, D).transpose(1, 2)
            q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
            k, v = k.repeat_interleave(NH // NKV, 1), v.repeat_interleave(NH // NKV, 1)
            a = torch.softmax(q @ k.transpose(-1, -2) * D ** -0.5 + mask, -1)
            x = x + l.o((a @ v).transpose(1, 2).reshape(B, T, NH * D))
            h = rms(x, l.n2)
            x = x + l.down(torch.nn.functional.silu(l.gate(h)) * l.up(h))
        return rms(x, self.norm) @ self.embed.weight.T


def save(model, out):
    os.makedirs(out, exist_ok=True)
    names = {"embed.weight": "model.embed_tokens.weight", "norm": "model.norm.weight"}
    for i in range(L):
        p = f"model.layers.{i}."
        for a, b in [("q", "self_attn.q_proj"), ("k", "self_attn.k_proj"), ("v", "self_attn.v_proj"),
                     ("o", "self_attn.o_proj"), ("gate", "mlp.gate_proj"), ("up", "mlp.up_proj"),
                     ("down", "mlp.down_proj")]:
            names[f"layers.{i}.{a}.weight"] = p + b + ".weight"
        names[f"layers.{i}.n1"] = p + "input_layernorm.weight"
        names[f"layers.{i}.n2"] = p + "post_attention_layernorm.weight"
    tensors, header, offset = [], {}, 0
    for key, t in sorted(model.state_dict().items()):
        if key not in names:
            continue
        a = t.detach().float().numpy()
        bits = a.view(np.uint32).astype(np.uint64)
        bf16 = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even
        raw = bf16.tobytes()
        header[names[key]] = {"dtype": "BF16", "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        tensors.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(tensors))
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H, "intermediate_size": I,
           "num_hidden_layers": L, "num_attention_heads": NH, "num_key_value_heads": NKV, "head_dim": D,
           "vocab_size": V, "max_position_embeddings": 2048, "rms_norm_eps": EPS, "rope_theta": THETA,
           "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
           "attention_bias": False, "mlp_bias": False, "torch_dtype": "bfloat16"}
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)


def main():
    ids = torch.tensor(json.load(open(sys.argv[1]))["ids"], dtype=torch.int64)
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    g = torch.Generator().manual_seed(1)
    t0 = time.time()
    for step in range(STEPS):
        starts = torch.randint(0, len(ids) - CTX - 1, (BATCH,), generator=g)
        batch = torch.stack([ids[s:s + CTX + 1] for s in starts])
        for pg in opt.param_groups:
            pg["lr"] = LR * min(1.0, (step + 1) / 20) * (1 - step / STEPS)
        logits = model(batch[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0 or step == STEPS - 1:
            print(f"step {step} loss {loss.item():.3f} ({time.time() - t0:.0f} s)", flush=True)
    save(model, sys.argv[2])


if __name__ == "__main__":
    main()
