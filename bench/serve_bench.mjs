// `smolvlm serve` throughput on loopback: aggregate decode tok/s of 1, 2, 4 and 8 concurrent greedy
// streams (batched and --no-batch), time to first token of an image request while 3 other streams
// decode, and the HTTP overhead per request (wall time minus the engine's own stage times).
// Usage: SMOLVLM_BINARY=build/smolvlm SMOLVLM_TEST_DATA=tests/data node bench/serve_bench.mjs MODEL_DIR [THREADS]
import { startServer, postJson, parseSse, imageMessage } from "../tests/server/lib.mjs";

const model = process.argv[2];
const threads = Number(process.argv[3] ?? 2);
const TOKENS = 64;

async function stream(url, body) {
  const t0 = performance.now();
  const r = await fetch(url + "/v1/chat/completions", { method: "POST", body: JSON.stringify({ ...body, stream: true }) });
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let text = "", first = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    first ??= performance.now();
    text += dec.decode(value, { stream: true });
  }
  const { chunks } = parseSse(text);
  const last = chunks[chunks.length - 1];
  return { start: t0, first, end: performance.now(), tokens: last.smolvlm.token_ids.length, engine: last.smolvlm };
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

// Time to first token of an image request: alone, then while 3 streams decode (--parallel 4).
const s = await startServer(["--parallel", "4", "--ctx", "2048"], { model, threads });
try {
  const image = { messages: imageMessage("Describe this image."), max_tokens: 4, temperature: 0 };
  await stream(s.url, image);
  const alone = await stream(s.url, image);
  const others = Array.from({ length: 3 }, (_, i) => stream(s.url, { ...textBody(i), max_tokens: 400 }));
  await new Promise((r) => setTimeout(r, 300));
  const busy = await stream(s.url, image);
  const bg = await Promise.all(others);
  console.log(JSON.stringify({ ttft_alone_s: (alone.first - alone.start) / 1000, ttft_with_3_decoding_s: (busy.first - busy.start) / 1000,
    image_tiles: busy.engine.image_tiles, vision_s: busy.engine.timings.vision_s, others_still_decoding: bg.every((r) => r.end > busy.first) }));
  // HTTP overhead: a 1-token text request, wall time minus the engine's own stage times.
  const over = [];
  for (let i = 0; i < 30; ++i) {
    const t0 = performance.now();
    const r = await postJson(s.url + "/v1/chat/completions", { messages: [{ role: "user", content: "Hi" }], max_tokens: 1, temperature: 0 });
    const wall = performance.now() - t0;
    const t = r.json.smolvlm.timings;
    over.push(wall - 1000 * (t.load_s + t.preprocess_s + t.vision_s + t.prefill_s + t.decode_s));
  }
  over.sort((a, b) => a - b);
  console.log(JSON.stringify({ http_overhead_ms_median: over[15], http_overhead_ms_p90: over[27] }));
} finally {
  await s.stop();
}
