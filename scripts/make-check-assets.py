#!/usr/bin/env python3
"""Builds assets/check/ (the data `smolvlm check` carries inside the binary) from the reference data in
../shared/reference. Run from the repository root; the output is committed, so users never need
../shared. Only the standard library is used."""
import gzip, json, os, shutil, sys

REF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "reference")
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "assets", "check")

def copy(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst)

def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    # The tiny SmolVLM (F16, tied lm_head) and its files; tokenizer.json compressed.
    mdir = os.path.join(REF, "models", "smolvlm-tiny-tied")
    for f in sorted(os.listdir(mdir)):
        if f == "tokenizer.json":  # 3.5 MB of JSON: stored compressed
            os.makedirs(os.path.join(OUT, "model"), exist_ok=True)
            with open(os.path.join(mdir, f), "rb") as i, gzip.open(os.path.join(OUT, "model", f + ".gz"), "wb", 9) as o:
                o.write(i.read())
        else:
            copy(os.path.join(mdir, f), os.path.join(OUT, "model", f))
    # Two model goldens: inputs (images, prompt, ids) and per-stage outputs.
    keep = ["vision_last_hidden.npy", "image_hidden_states.npy", "prefill_logits_last.npy",
            "step_logits_topk_ids.npy", "step_logits_topk_values.npy", "step_logits_probe.npy"]
    for case in ["tied_nosplit_square", "tied_two_images"]:
        cdir = os.path.join(REF, "goldens", case)
        c = json.load(open(os.path.join(cdir, "case.json")))
        images = []
        for k, img in enumerate(c["images"]):
            name = "image%d%s" % (k, os.path.splitext(img)[1])
            copy(os.path.join(REF, img), os.path.join(OUT, "goldens", case, name))
            images.append(name)
        slim = {k: c[k] for k in ["prompt", "do_image_splitting", "rows", "cols", "text", "input_ids",
                                  "generated_ids", "eos_token_ids", "max_new_tokens", "pixel_values_shape",
                                  "pixel_values_data_sha256", "vision_last_hidden_shape",
                                  "image_hidden_states_shape", "step_logits_shape", "min_top2_margin"]}
        slim["images"] = images
        json.dump(slim, open(os.path.join(OUT, "goldens", case, "case.json"), "w"), indent=1)
        for f in keep:
            copy(os.path.join(cdir, f), os.path.join(OUT, "goldens", case, f))
    # Decoding: one file per decoder configuration that matters, with the decoded-RGB hash.
    decode = ["pillow_hopper.jpg", "gen_progressive_cjpeg.jpg", "gen_sub420_pillow.jpg", "gen_sub440_cjpeg.jpg",
              "gen_cmyk_adobe.jpg", "gen_rgb48.png", "gen_gray16.png", "pillow_p_trns_single.png",
              "pillow_hopper.webp", "gen_webp_lossy_alpha.webp"]
    expected = []
    for f in decode:
        copy(os.path.join(REF, "images", "odd", f), os.path.join(OUT, "images", f))
        g = json.load(open(os.path.join(REF, "goldens_pre", f + ".json")))
        expected.append({"file": f, "mode": g["pil_open"]["mode"], "format": g["pil_open"]["format"],
                         "width": g["decoded"]["width"], "height": g["decoded"]["height"],
                         "rgb_sha256": g["decoded"]["rgb_sha256"]})
    # Tiling with the real SmolVLM-256M processor config (2048 / 512): a tiny image upscaled and split.
    tiling = []
    for f in ["gen_1x7.png", "pillow_hopper.jpg"]:
        copy(os.path.join(REF, "images", "odd", f), os.path.join(OUT, "images", f))
        g = json.load(open(os.path.join(REF, "goldens_pre", f + ".json")))
        for mode in ["split", "nosplit"]:
            s = g[mode]
            tiling.append({"file": f, "split": mode == "split", "rows": s["rows"], "cols": s["cols"],
                           "num_tiles": s["num_tiles"], "tiles_u8_sha256": s["tiles_u8"]["sha256"],
                           "pixel_values_sha256": s["pixel_values"]["data_sha256"]})
    copy(os.path.join(REF, "models", "smolvlm-256m-instruct", "preprocessor_config.json"),
         os.path.join(OUT, "real_preprocessor_config.json"))
    json.dump({"decode": expected, "tiling": tiling}, open(os.path.join(OUT, "images", "expected.json"), "w"), indent=1)
    # Resampling: every filter, RGB and L, a few size pairs (down, up, one axis).
    v = json.load(open(os.path.join(REF, "goldens_pre", "resample", "vectors.json")))
    picked, seen = [], set()
    for case in v["cases"]:
        key = (case["filter"], case["mode"], tuple(case["src_wh"]) < tuple(case["dst_wh"]))
        if key in seen or max(case["src_wh"]) > 64 or max(case["dst_wh"]) > 128:
            continue
        seen.add(key)
        src = os.path.basename(case["src"])
        copy(os.path.join(REF, "goldens_pre", "resample", "src", src), os.path.join(OUT, "resample", src))
        picked.append({"filter": case["filter"], "filter_id": case["filter_id"], "mode": case["mode"], "src": src,
                       "src_wh": case["src_wh"], "src_sha256": case["src_sha256"], "dst_wh": case["dst_wh"],
                       "out_sha256": case["out_sha256"]})
    json.dump(picked, open(os.path.join(OUT, "resample", "vectors.json"), "w"), indent=1)
    # Tokenizer: tricky strings of the SmolVLM corpus with HF's ids.
    cases = [json.loads(l) for l in open(os.path.join(REF, "tokenizers", "smolvlm", "corpus.jsonl"))]
    cats, tok = {}, []
    for c in cases:
        if cats.get(c["cat"], 0) >= 2 or len(c["text"]) > 300:
            continue
        cats[c["cat"]] = cats.get(c["cat"], 0) + 1
        tok.append({"text": c["text"], "ids": c["ids"], "decode": c["decode"]})
    with open(os.path.join(OUT, "tokenizer_cases.jsonl"), "w") as o:
        for t in tok:
            o.write(json.dumps(t, ensure_ascii=False) + "\n")
    print("assets/check:", sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs), "bytes,",
          len(expected), "decode,", len(tiling), "tiling,", len(picked), "resample,", len(tok), "tokenizer cases")

if __name__ == "__main__":
    sys.exit(main())
