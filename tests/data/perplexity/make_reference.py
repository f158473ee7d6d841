#!/usr/bin/python3
"""HF-style teacher-forced perplexity of the tiny reference checkpoints, for `smolvlm perplexity`'s test.

Run with Debian's python3 and python3-torch (1.13, the reference's torch): the test itself reads only
the JSON this writes. The text model is HF's LlamaForCausalLM eager math in fp32 (RMSNorm, rotate-half
RoPE with the default inv_freq, GQA by repeat_kv, softmax in fp32, SiLU MLP), and the loss is HF's:
CrossEntropyLoss(mean) over logits[:-1] against ids[1:], perplexity = exp(loss). The port is checked
against HF's own logits of the text goldens (every greedy step's top-32 values in tests/data/goldens,
teacher-forced) before any number is written.

  /usr/bin/python3 tests/data/perplexity/make_reference.py
"""
import json
import math
import os
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)
MODELS = ["llama-tiny", "smolvlm-tiny", "smolvlm-tiny-tied"]


def load_safetensors(folder):
    files = []
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = {}
    for name in files:
        raw = open(os.path.join(folder, name), "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(raw[8:8 + n])
        base = 8 + n
        for key, t in header.items():
            if key == "__metadata__":
                continue
            a, b = t["data_offsets"]
            buf = raw[base + a:base + b]
            if t["dtype"] == "BF16":
                u = np.frombuffer(buf, dtype=np.uint16).astype(np.uint32) << 16
                arr = u.view(np.float32)
            elif t["dtype"] == "F16":
                arr = np.frombuffer(buf, dtype=np.float16).astype(np.float32)
            else:
                arr = np.frombuffer(buf, dtype=np.float32).copy()
            out[key] = torch.from_numpy(arr.reshape(t["shape"]).copy())
    return out


def text_config(cfg):
    return cfg.get("text_config", cfg), cfg.get("tie_word_embeddings", False)


def logits_of(w, cfg, ids):
    t, tied = text_config(cfg)
    prefix = "model.text_model." if "model.text_model.embed_tokens.weight" in w else "model."
    H, L = t["hidden_size"], t["num_hidden_layers"]
    nh, nkv = t["num_attention_heads"], t.get("num_key_value_heads", t["num_attention_heads"])
    D = t.get("head_dim", H // nh)
    eps, theta = t.get("rms_norm_eps", 1e-6), t.get("rope_theta", 10000.0)
    T = len(ids)

    def rms(x, g):
        var = x.pow(2).mean(-1, keepdim=True)
        return g * (x * torch.rsqrt(var + eps))

    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    pos = torch.arange(T).float()
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rot(x):
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        return torch.cat((-x2, x1), dim=-1)

    x = w[prefix + "embed_tokens.weight"][torch.tensor(ids)]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for l in range(L):
        p = f"{prefix}layers.{l}."
        h = rms(x, w[p + "input_layernorm.weight"])
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, nh, D).transpose(0, 1)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, nkv, D).transpose(0, 1)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, nkv, D).transpose(0, 1)
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        k = k.repeat_interleave(nh // nkv, dim=0)
        v = v.repeat_interleave(nh // nkv, dim=0)
        a = torch.softmax(q @ k.transpose(1, 2) * D ** -0.5 + mask, dim=-1, dtype=torch.float32)
        o = (a @ v).transpose(0, 1).reshape(T, nh * D)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        g = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)
        x = x + g @ w[p + "mlp.down_proj.weight"].T
    x = rms(x, w[prefix + "norm.weight"])
    head = w[prefix + "embed_tokens.weight"] if tied else w["lm_head.weight"]
    return x @ head.T


def check_port(model, w, cfg):
    """The port against HF's step logits of every text golden of this model (top-32 values)."""
    worst, cases = 0.0, 0
    gold = os.path.join(DATA, "goldens")
    for case in sorted(os.listdir(gold)):
        spec_path = os.path.join(gold, case, "case.json")
        if not os.path.exists(spec_path):
            continue
        spec = json.load(open(spec_path))
        if os.path.basename(spec["model"]) != model or spec.get("images"):
            continue
        ids = spec["input_ids"]
        generated = np.load(os.path.join(gold, case, "generated_ids.npy")).astype(np.int64).tolist()
        top_ids = np.load(os.path.join(gold, case, "step_logits_topk_ids.npy")).astype(np.int64)
        top_vals = np.load(os.path.join(gold, case, "step_logits_topk_values.npy"))
        # Teacher-forced over the prompt and HF's greedy tokens: row len(ids) - 1 + s is step s.
        logits = logits_of(w, cfg, ids + generated[:-1]).numpy()
        for step in range(top_ids.shape[0]):
            row = logits[len(ids) - 1 + step]
            worst = max(worst, float(np.abs(row[top_ids[step]] - top_vals[step]).max()))
        cases += 1
    # smolvlm-tiny has image goldens only: its text model is the same code as the others'.
    assert worst < 1e-4, (model, worst)
    return worst, cases


def main():
    sequences = json.load(open(os.path.join(HERE, "ids.json")))["sequences"]
    out = {"torch": torch.__version__, "models": {}}
    torch.set_grad_enabled(False)
    for model in MODELS:
        folder = os.path.join(DATA, "models", model)
        cfg = json.load(open(os.path.join(folder, "config.json")))
        w = load_safetensors(folder)
        worst, cases = check_port(model, w, cfg)
        total, count = 0.0, 0
        for ids in sequences:
            logits = logits_of(w, cfg, ids)
            loss = torch.nn.CrossEntropyLoss()(logits[:-1], torch.tensor(ids[1:]))
            total += float(loss) * (len(ids) - 1)
            count += len(ids) - 1
        out["models"][model] = {"perplexity": math.exp(total / count), "scored_tokens": count,
                                "port_check": {"golden_cases": cases, "max_abs_step_top32": worst}}
        print(model, out["models"][model])
    json.dump(out, open(os.path.join(HERE, "reference.json"), "w"), indent=2)


if __name__ == "__main__":
    main()
