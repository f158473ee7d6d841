// A bounded load test on loopback: 8 concurrent clients x 25 requests against --parallel 4, mixing
// image and text chats, streamed and whole answers, completions, streams the client cancels, and
// malformed bodies. Every answer must equal the same request's answer when sent alone (token ids),
// every malformed body its 4xx, and the server must stay up. Peak RSS is printed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startServer, imageMessage, postJson, parseSse, peakRssKb, sleep, IMAGE_URL } from "./lib.mjs";

const CLIENTS = 8, PER_CLIENT = 25;

const kinds = [
  { name: "image", path: "/v1/chat/completions", body: { messages: imageMessage("Describe this image."), max_tokens: 12, temperature: 0 } },
  { name: "image-stream", path: "/v1/chat/completions",
    body: { messages: imageMessage("What is in the picture?"), max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true } } },
  { name: "text", path: "/v1/chat/completions", body: { messages: [{ role: "user", content: "Hi there" }], max_tokens: 16, temperature: 0 } },
  { name: "completion-stream", path: "/v1/completions", body: { prompt: "Once upon a time", max_tokens: 16, temperature: 0, stream: true } },
  { name: "cancelled", path: "/v1/chat/completions", cancel: true,
    body: { messages: imageMessage("Tell a long story."), max_tokens: 2000, ignore_eos: true, temperature: 0, stream: true } },
  { name: "malformed", path: "/v1/chat/completions", malformed: true },
];
const malformed = [
  { body: "{\"messages\": [", status: 400 },
  { body: JSON.stringify({ messages: [{ role: "user", content: "x" }], n: 2 }), status: 400 },
  { body: JSON.stringify({ messages: imageMessage("q", "data:image/png;base64,aGVsbG8=") }), status: 400 },
  { body: JSON.stringify({ messages: [{ role: "robot", content: "x" }] }), status: 400 },
];

// The ids and text of one answer (whole or streamed).
async function run(url, kind) {
  const r = await postJson(url + kind.path, kind.body);
  assert.equal(r.status, 200, kind.name + ": " + r.text.slice(0, 300));
  if (!kind.body.stream) return { ids: r.json.smolvlm.token_ids, text: r.json.choices[0].message?.content ?? r.json.choices[0].text };
  const { chunks, done } = parseSse(r.text);
  assert.ok(done, kind.name + ": [DONE]");
  let text = "", ids = null;
  for (const c of chunks) {
    if (c.smolvlm) ids = c.smolvlm.token_ids;
    if (c.choices.length) text += c.choices[0].delta?.content ?? c.choices[0].text ?? "";
  }
  return { ids, text };
}

async function cancelled(url, kind) {
  const ac = new AbortController();
  const r = await fetch(url + kind.path, { method: "POST", body: JSON.stringify(kind.body), signal: ac.signal });
  assert.equal(r.status, 200);
  const reader = r.body.getReader();
  await reader.read();
  ac.abort();
  await reader.read().catch(() => {});
}

test("8 clients x 25 mixed requests against --parallel 4", { timeout: 200000 }, async () => {
  const s = await startServer(["--parallel", "4", "--queue", "8", "--ctx", "4096"]);
  try {
    const expected = {};
    for (const k of kinds) if (!k.cancel && !k.malformed) expected[k.name] = await run(s.url, k);
    const counts = {};
    let mismatches = 0;
    const t0 = Date.now();
    await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
      for (let i = 0; i < PER_CLIENT; ++i) {
        const kind = kinds[(c * 7 + i * 5) % kinds.length];
        counts[kind.name] = (counts[kind.name] ?? 0) + 1;
        if (kind.cancel) {
          await cancelled(s.url, kind);
        } else if (kind.malformed) {
          const m = malformed[(c + i) % malformed.length];
          const r = await postJson(s.url + kind.path, m.body);
          assert.equal(r.status, m.status, r.text);
          assert.ok(r.json?.error?.message);
        } else {
          const got = await run(s.url, kind);
          if (JSON.stringify(got) !== JSON.stringify(expected[kind.name])) ++mismatches;
          assert.deepEqual(got, expected[kind.name], `${kind.name} (client ${c}, request ${i})`);
        }
      }
    }));
    const seconds = (Date.now() - t0) / 1000;
    assert.equal(mismatches, 0);
    assert.equal(Object.values(counts).reduce((a, b) => a + b, 0), CLIENTS * PER_CLIENT);
    // Every slot comes free again, and the server still answers.
    let health;
    // The cancelled streams' slots free at their next token; the bound only catches a hang.
    for (const t0 = Date.now(); Date.now() - t0 < 60000; await sleep(25)) {
      health = await (await fetch(s.url + "/health")).json();
      if (health.slots_busy === 0 && health.queued === 0) break;
    }
    assert.equal(health.slots_busy, 0);
    assert.equal(s.proc.exitCode, null, "the server is still running");
    const rss = peakRssKb(s.proc.pid);
    const metrics = await (await fetch(s.url + "/metrics")).text();
    console.log(`load: ${CLIENTS * PER_CLIENT} requests in ${seconds.toFixed(1)} s (${JSON.stringify(counts)}), ` +
      `peak RSS ${(rss / 1024).toFixed(1)} MiB; ${metrics.match(/^smolvlm_decode_tokens_per_second .*/m)[0]}`);
  } finally {
    assert.equal((await s.stop()).code, 0, s.stderr());
  }
});
