// `smolvlm serve` at the HTTP level, with curl: every error status in OpenAI's shape, the media
// rules (--media-path escapes, remote images refused by default, private addresses refused even
// with --allow-remote-images), a client that disconnects freeing its slot, and SIGINT draining.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createServer } from "node:http";
import { mkdtempSync, writeFileSync, readFileSync, symlinkSync, copyFileSync, mkdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startServer, caption, generate, imageMessage, IMAGE, parseSse, sleep, PADDED_MODEL, PADDED_PROMPT, PADDED_ID } from "./lib.mjs";

const tmp = mkdtempSync(path.join(os.tmpdir(), "smolvlm-serve-test-"));
process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
let seq = 0;

// One request through curl: { status, headers (lower-case names), text, json }.
async function curl(url, { method = "GET", body = null, headers = {}, maxTime = 60 } = {}) {
  const n = ++seq;
  const out = path.join(tmp, `body${n}`), hdr = path.join(tmp, `head${n}`);
  const args = ["-sS", "-o", out, "-D", hdr, "-w", "%{http_code}", "-X", method, "--max-time", String(maxTime)];
  for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}: ${v}`);
  if (body !== null) {
    const f = path.join(tmp, `req${n}`);
    writeFileSync(f, typeof body === "string" ? body : JSON.stringify(body));
    args.push("-H", "Content-Type: application/json", "--data-binary", "@" + f);
  }
  const status = Number((await promisify(execFile)("curl", [...args, url], { encoding: "utf8" })).stdout);
  const text = readFileSync(out, "utf8");
  const h = {};
  for (const line of readFileSync(hdr, "utf8").split("\r\n")) {
    const i = line.indexOf(":");
    if (i > 0) h[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status, headers: h, text, json };
}

function assertError(r, status, { param, code } = {}) {
  assert.equal(r.status, status, r.text);
  assert.ok(r.json && r.json.error, "an OpenAI error object: " + r.text);
  const e = r.json.error;
  assert.equal(typeof e.message, "string");
  assert.ok(e.message.length > 0);
  assert.equal(typeof e.type, "string");
  assert.ok("param" in e && "code" in e);
  if (param !== undefined) assert.equal(e.param, param);
  if (code !== undefined) assert.equal(e.code, code);
}

const chat = (url) => url + "/v1/chat/completions";

test("bad requests: 400, 401, 404, 413 in OpenAI's shape", async () => {
  const s = await startServer(["--api-key", "k1", "--max-body", "0.5", "--ctx", "64"]);
  try {
    const auth = { Authorization: "Bearer k1" };
    assert.equal((await curl(s.url + "/health")).status, 200, "health is public");
    assert.match((await curl(s.url + "/")).text, /<title>smolvlm<\/title>/, "the page is public");
    assertError(await curl(chat(s.url), { method: "POST", body: { messages: [{ role: "user", content: "hi" }] } }), 401, { code: "invalid_api_key" });
    assertError(await curl(chat(s.url), { method: "POST", body: {}, headers: { Authorization: "Bearer k2" } }), 401);
    assertError(await curl(s.url + "/v1/models"), 401);
    const models = await curl(s.url + "/v1/models", { headers: auth });
    assert.equal(models.status, 200);
    // What the model runs on: the kernel path, the precision and each stored format's decode products.
    const info = models.json.data[0].smolvlm;
    assert.equal(info.precision, "exact");
    assert.match(info.decode_products, new RegExp(`^BF16 ${info.kernel_path} fp32$`), JSON.stringify(info));
    assert.equal(info.weight_memory, "read", "a small model's weights are read into memory");
    assertError(await curl(chat(s.url), { method: "POST", body: "{\"messages\": [", headers: auth }), 400, { code: "invalid_json" });
    assertError(await curl(chat(s.url), { method: "POST", body: { messages: [{ role: "user", content: "hi" }], n: 3 }, headers: auth }), 400, { param: "n" });
    assertError(await curl(chat(s.url), { method: "POST", body: { messages: [{ role: "user", content: "hi" }], presence_penalty: 1 }, headers: auth }),
      400, { param: "presence_penalty" });
    // Not an image at all, and an image whose bytes are broken: both 400 naming the part.
    const notImage = [{ role: "user", content: [{ type: "text", text: "q" },
      { type: "image_url", image_url: { url: "data:image/png;base64," + Buffer.from("hello world").toString("base64") } }] }];
    assertError(await curl(chat(s.url), { method: "POST", body: { messages: notImage }, headers: auth }), 400, { param: "messages[0].content[1].image_url" });
    const broken = Buffer.concat([readFileSync(IMAGE).subarray(0, 200)]);
    const r = await curl(chat(s.url), { method: "POST", body: { messages: imageMessage("q", "data:image/jpeg;base64," + broken.toString("base64")) }, headers: auth });
    assertError(r, 400);
    // The image's tokens alone exceed a 64-token context.
    assertError(await curl(chat(s.url), { method: "POST", body: { messages: imageMessage("Describe this image.") }, headers: auth }), 400,
      { code: "context_length_exceeded" });
    assertError(await curl(chat(s.url), { method: "POST", body: { messages: [{ role: "user", content: "x".repeat(1000000) }] }, headers: auth }), 413);
    assertError(await curl(s.url + "/v1/nothing", { headers: auth }), 404);
    assertError(await curl(chat(s.url), { method: "POST", body: { model: "other", messages: [{ role: "user", content: "hi" }] }, headers: auth }), 404,
      { code: "model_not_found" });
    // Still serving after all of that.
    const ok = await curl(chat(s.url), { method: "POST", body: { messages: [{ role: "user", content: "hi" }], max_tokens: 2 }, headers: auth });
    assert.equal(ok.status, 200, ok.text);
    const metrics = (await curl(s.url + "/metrics")).text;
    assert.match(metrics, /smolvlm_requests_total\{path="\/v1\/chat\/completions",status="400"\} [1-9]/);
    assert.match(metrics, /smolvlm_completion_tokens_total 2\b/);
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});

test("a full queue answers 503 with Retry-After; a client that disconnects frees its slot", async () => {
  const s = await startServer(["--parallel", "1", "--queue", "0", "--ctx", "8192"]);
  try {
    const long = { messages: [{ role: "user", content: "hi" }], max_tokens: 8000, ignore_eos: true, stream: true };
    const ac = new AbortController();
    const r = await fetch(chat(s.url), { method: "POST", body: JSON.stringify(long), signal: ac.signal });
    assert.equal(r.status, 200);
    const reader = r.body.getReader();
    await reader.read();  // the stream has begun: the one slot is busy
    const busy = await curl(chat(s.url), { method: "POST", body: { messages: [{ role: "user", content: "hi" }], max_tokens: 2 } });
    assertError(busy, 503, { code: "queue_full" });
    assert.equal(busy.headers["retry-after"], "1");
    ac.abort();
    // The slot comes free when the engine stops at its next token; the bound only catches a hang.
    let health;
    for (const t0 = Date.now(); Date.now() - t0 < 60000; await sleep(20)) {
      health = (await curl(s.url + "/health")).json;
      if (health.slots_busy === 0) break;
    }
    assert.equal(health.slots_busy, 0, "the slot was freed after the disconnect");
    // Freed by the cancellation, not by the end of its 8000 tokens.
    const metrics = (await curl(s.url + "/metrics")).text;
    assert.match(metrics, /^smolvlm_generations_cancelled_total 1$/m, metrics);
    const after = await curl(chat(s.url), { method: "POST", body: { messages: [{ role: "user", content: "hi" }], max_tokens: 2 } });
    assert.equal(after.status, 200, after.text);
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});

test("file:// only under --media-path, with no escape", async () => {
  const media = path.join(tmp, "media");
  mkdirSync(path.join(media, "sub"), { recursive: true });
  copyFileSync(IMAGE, path.join(media, "sub", "flower.jpg"));
  copyFileSync(IMAGE, path.join(tmp, "outside.jpg"));
  symlinkSync(path.join(tmp, "outside.jpg"), path.join(media, "link.jpg"));
  mkdirSync(path.join(tmp, "media-other"), { recursive: true });
  copyFileSync(IMAGE, path.join(tmp, "media-other", "x.jpg"));
  const none = await startServer([]);
  try {
    assertError(await curl(chat(none.url), { method: "POST", body: { messages: imageMessage("q", "file://" + path.join(media, "sub", "flower.jpg")) } }),
      400, { param: "messages[0].content[0].image_url" });
  } finally {
    await none.stop();
  }
  const s = await startServer(["--media-path", media]);
  try {
    for (const escape of [media + "/../outside.jpg", media + "/link.jpg", media + "/sub/../../outside.jpg", path.join(tmp, "outside.jpg"),
      path.join(tmp, "media-other", "x.jpg"), "/etc/passwd", media + "/sub", media + "/missing.jpg", "sub/flower.jpg"]) {
      const r = await curl(chat(s.url), { method: "POST", body: { messages: imageMessage("q", "file://" + escape), max_tokens: 2 } });
      assertError(r, 400, { param: "messages[0].content[0].image_url" });
    }
    const ref = caption("Describe this image.", 6);
    const r = await curl(chat(s.url), { method: "POST", body: { messages: imageMessage("Describe this image.", "file://" + media + "/sub/flower.jpg"),
      max_tokens: 6, temperature: 0 } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.smolvlm.token_ids, ref.token_ids);
  } finally {
    await s.stop();
  }
});

test("remote images: refused by default, private addresses refused when allowed, fetched when private is allowed", async () => {
  const bytes = readFileSync(IMAGE);
  let hits = 0;
  const origin = createServer((req, res) => {
    ++hits;
    if (req.url === "/redirect-file") { res.writeHead(302, { Location: "file:///etc/passwd" }); return res.end(); }
    if (req.url.startsWith("/loop")) { res.writeHead(302, { Location: "/loop" + (Number(req.url.slice(5) || 0) + 1) }); return res.end(); }
    if (req.url === "/big") { res.writeHead(200); return res.end(Buffer.alloc(3 << 20)); }
    if (req.url === "/ua") { res.writeHead(200); return res.end(bytes); }
    res.writeHead(req.url === "/flower.jpg" ? 200 : 404, { "Content-Type": "image/jpeg" });
    res.end(req.url === "/flower.jpg" ? bytes : "");
  });
  await new Promise((r) => origin.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${origin.address().port}`;
  const ask = (s, url, n = 2) => curl(chat(s.url), { method: "POST", body: { messages: imageMessage("Describe this image.", url), max_tokens: n, temperature: 0 } });
  try {
    let s = await startServer([]);
    try {
      const r = await ask(s, base + "/flower.jpg");
      assertError(r, 400, { param: "messages[0].content[0].image_url" });
      assert.match(r.json.error.message, /--allow-remote-images/);
      assert.equal(hits, 0, "nothing was fetched");
    } finally {
      await s.stop();
    }
    s = await startServer(["--allow-remote-images"]);
    try {
      for (const url of [base + "/flower.jpg", `http://localhost:${origin.address().port}/flower.jpg`, `http://[::1]:${origin.address().port}/x`]) {
        const r = await ask(s, url);
        assertError(r, 400, { param: "messages[0].content[0].image_url" });
        assert.match(r.json.error.message, /private or reserved address/);
      }
      assert.equal(hits, 0, "no connection was opened to a private address");
    } finally {
      await s.stop();
    }
    s = await startServer(["--allow-remote-images", "--allow-private-images", "--max-image", "1"]);
    try {
      const ref = caption("Describe this image.", 6);
      const r = await ask(s, base + "/flower.jpg", 6);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json.smolvlm.token_ids, ref.token_ids);
      assertError(await ask(s, base + "/missing.jpg"), 400);
      assertError(await ask(s, base + "/redirect-file"), 400);
      assertError(await ask(s, base + "/loop0"), 400);
      assertError(await ask(s, base + "/big"), 400);
    } finally {
      await s.stop();
    }
  } finally {
    origin.close();
  }
});

test("SIGINT lets an in-flight stream finish, then exits 0", async () => {
  const s = await startServer(["--grace", "20"]);
  const r = await fetch(chat(s.url), { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "hi" }],
    max_tokens: 300, ignore_eos: true, stream: true }) });
  // SIGINT once the first event is in (the stream is running): then it must run to its end.
  const reader = r.body.getReader(), utf8 = new TextDecoder();
  let text = utf8.decode((await reader.read()).value, { stream: true });
  s.proc.kill("SIGINT");
  for (let part = await reader.read(); !part.done; part = await reader.read()) text += utf8.decode(part.value, { stream: true });
  const { chunks, done } = parseSse(text);
  assert.ok(done, "the stream ended with [DONE]");
  const last = chunks[chunks.length - 1];
  assert.equal(last.choices[0].finish_reason, "length");
  assert.equal(last.smolvlm.token_ids.length, 300);
  assert.equal((await s.exited).code, 0, s.stderr());
  assert.match(s.stderr(), /SIGINT/);
});

test("an id the tokenizer lacks is generated, kept in the ids and adds no text, whole or streamed", async () => {
  const ref = generate(PADDED_PROMPT, 8, [], PADDED_MODEL);
  assert.equal(ref.token_ids[0], PADDED_ID);
  const s = await startServer([], { model: PADDED_MODEL });
  try {
    const body = { prompt: PADDED_PROMPT, max_tokens: 8, temperature: 0 };
    const whole = await curl(s.url + "/v1/completions", { method: "POST", body });
    assert.equal(whole.status, 200, whole.text);
    assert.deepEqual(whole.json.smolvlm.token_ids, ref.token_ids);
    assert.equal(whole.json.choices[0].text, ref.text);
    const streamed = await curl(s.url + "/v1/completions", { method: "POST", body: { ...body, stream: true } });
    assert.equal(streamed.status, 200, streamed.text);
    const { chunks, done } = parseSse(streamed.text);
    assert.ok(done, "the stream ended with [DONE]");
    assert.equal(chunks.map((c) => c.choices[0]?.text ?? "").join(""), ref.text);
    assert.deepEqual(chunks.findLast((c) => c.smolvlm).smolvlm.token_ids, ref.token_ids);
  } finally {
    assert.equal((await s.stop()).code, 0, s.stderr());
  }
});
