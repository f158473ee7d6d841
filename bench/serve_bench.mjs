// `smolvlm serve` throughput on loopback: aggregate decode tok/s of 1, 2, 4 and 8 concurrent greedy
// streams (batched and --no-batch), times to first token of image requests (first, follow-up, same
// image in a new conversation, while 3 other streams decode), and the HTTP overhead per request.
// Usage: SMOLVLM_BINARY=build/smolvlm SMOLVLM_TEST_DATA=tests/data node bench/serve_bench.mjs MODEL_DIR [THREADS]
import { startServer, postJson, parseSse, imageMessage } from "../tests/server/lib.mjs";

const model = process.argv[2];
const threads = Number(process.argv[3] ?? 2);
const TOKENS = 64;

const median = (v) => (v.length ? [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] : 0);

async function stream(url, body) {
  const t0 = performance.now();
  const r = await fetch(url + "/v1/chat/completions", { method: "POST", body: JSON.stringify({ ...body, stream: true,
    stream_options: { include_usage: true } }) });
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let text = "", first = null, prev = null;
  const gaps = [];  // time between pieces after the first: { at, ms }
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const now = performance.now();
    first ??= now;
    if (prev !== null) gaps.push({ at: now, ms: now - prev });
    prev = now;
    text += dec.decode(value, { stream: true });
  }
  const { chunks } = parseSse(text);
  const last = chunks.findLast((c) => c.smolvlm);
  const answer = chunks.map((c) => c.choices?.[0]?.delta?.content ?? "").join("");
  const usage = chunks.find((c) => c.usage)?.usage;
  return { start: t0, first, end: performance.now(), tokens: last.smolvlm.token_ids.length, engine: last.smolvlm, text: answer, gaps, usage };
}

const textBody = (i) => ({ messages: [{ role: "user", content: `Story number ${i}: once upon a time` }], max_tokens: TOKENS,
  ignore_eos: true, temperature: 0 });

const rows = [];
for (const batch of [true, false]) {
  for (const n of [1, 2, 4, 8]) {
    if (!batch && n === 1) continue;
    const s = await startServer(["--parallel", String(n), "--ctx", "1024", ...(batch ? [] : ["--no-batch"])], { model, threads });
    try {
      await stream(s.url, textBody(99));  // warm-up
      const runs = await Promise.all(Array.from({ length: n }, (_, i) => stream(s.url, textBody(i))));
      const t0 = Math.min(...runs.map((r) => r.first)), t1 = Math.max(...runs.map((r) => r.end));
      const decoded = runs.reduce((a, r) => a + r.tokens - 1, 0);
      rows.push({ streams: n, batch, aggregate_tok_s: decoded / ((t1 - t0) / 1000) });
      console.log(JSON.stringify(rows[rows.length - 1]));
    } finally {
      await s.stop();
    }
  }
}

// Time to first token of an image request on a fresh server (vision and the whole prompt), of a second
// question in the same conversation and in a new conversation about the same image (the vision
// cache and the slot's KV of the common prefix), and of the same cold image while 3 streams decode
// (its prefill runs in --prefill-chunk calls between their steps: their longest gap between pieces
// is reported). Then the HTTP overhead per request.
const ttft = (r) => (r.first - r.start) / 1000;
// A 400 x 300 picture (24-bit BMP), sent with `split: false`: one tile through the vision tower.
function oneTileBmpUrl(seed = 0) {
  const w = 400, h = 300, row = w * 3, size = 54 + row * h;
  const b = Buffer.alloc(size);
  b.write("BM", 0);
  b.writeUInt32LE(size, 2);
  b.writeUInt32LE(54, 10);
  b.writeUInt32LE(40, 14);
  b.writeInt32LE(w, 18);
  b.writeInt32LE(h, 22);
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(24, 28);
  b.writeUInt32LE(row * h, 34);
  for (let y = 0; y < h; ++y)
    for (let x = 0; x < w; ++x) {
      const o = 54 + y * row + x * 3;
      b[o] = (x * 255) / w, b[o + 1] = (y * 255) / h, b[o + 2] = (((x + y) * 127) / (w + h) + seed * 40) & 255;
    }
  return "data:image/bmp;base64," + b.toString("base64");
}
const image = (q, extra = {}) => ({ messages: imageMessage(q), max_tokens: 4, temperature: 0, ...extra });
const s = await startServer(["--parallel", "4", "--ctx", "4096"], { model, threads });
try {
  await stream(s.url, textBody(98));  // warm-up without the image
  const first = await stream(s.url, image("Describe this image."));
  const followUp = await stream(s.url, { ...image("Describe this image."), messages: [...imageMessage("Describe this image."),
    { role: "assistant", content: first.text }, { role: "user", content: "What colour is it?" }] });
  const sameImage = await stream(s.url, image("Where was this taken?"));
  console.log(JSON.stringify({ image_tiles: first.engine.image_tiles, prompt_tokens: first.usage?.prompt_tokens,
    ttft_first_s: ttft(first), ttft_follow_up_s: ttft(followUp), follow_up_cached: followUp.usage?.prompt_tokens_details?.cached_tokens,
    ttft_new_conversation_same_image_s: ttft(sameImage), same_image_cached: sameImage.usage?.prompt_tokens_details?.cached_tokens,
    follow_up_ratio: ttft(followUp) / ttft(first), same_image_ratio: ttft(sameImage) / ttft(first) }));
} finally {
  await s.stop();
}
const busyServer = await startServer(["--parallel", "4", "--ctx", "4096"], { model, threads });
try {
  await stream(busyServer.url, textBody(98));
  const alone = await stream(busyServer.url, { messages: imageMessage("Describe this image.", oneTileBmpUrl(1)), max_tokens: 4, temperature: 0, split: false });
  const others = Array.from({ length: 3 }, (_, i) => stream(busyServer.url, { ...textBody(i), max_tokens: 300 }));
  await new Promise((r) => setTimeout(r, 1500));
  const busy = await stream(busyServer.url, { messages: imageMessage("Describe this image.", oneTileBmpUrl()), max_tokens: 4, temperature: 0, split: false });
  const bg = await Promise.all(others);
  const during = bg.map((r) => Math.max(0, ...r.gaps.filter((g) => g.at > busy.start && g.at <= busy.first + 1).map((g) => g.ms)));
  console.log(JSON.stringify({ ttft_cold_one_tile_image_alone_s: ttft(alone), ttft_cold_one_tile_image_with_3_decoding_s: ttft(busy), image_tiles: busy.engine.image_tiles,
    vision_s: busy.engine.timings.vision_s, prefill_s: busy.engine.timings.prefill_s,
    others_longest_gap_during_it_ms: during, others_median_gap_ms: bg.map((r) => median(r.gaps.map((g) => g.ms))),
    others_still_decoding: bg.every((r) => r.end > busy.first) }));
} finally {
  await busyServer.stop();
}
const s2 = await startServer(["--parallel", "4", "--ctx", "2048"], { model, threads });
try {
  await stream(s2.url, textBody(98));
  // HTTP overhead: a 1-token text request, wall time minus the engine's own stage times.
  const over = [];
  for (let i = 0; i < 30; ++i) {
    const t0 = performance.now();
    const r = await postJson(s2.url + "/v1/chat/completions", { messages: [{ role: "user", content: "Hi " + i }], max_tokens: 1, temperature: 0 });
    const wall = performance.now() - t0;
    const t = r.json.smolvlm.timings;
    over.push(wall - 1000 * (t.load_s + t.preprocess_s + t.vision_s + t.prefill_s + t.decode_s));
  }
  over.sort((a, b) => a - b);
  console.log(JSON.stringify({ http_overhead_ms_median: over[15], http_overhead_ms_p90: over[27] }));
} finally {
  await s2.stop();
}
