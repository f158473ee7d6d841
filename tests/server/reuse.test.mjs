// Reuse across requests and chunked prefill through the server: a follow-up turn that repeats the
// conversation keeps the slot's KV of the common prefix (usage.prompt_tokens_details.cached_tokens,
// /metrics) and answers exactly what a server that prefills everything answers; a different image
// at the same place is not reused; prefill in small chunks while other streams decode changes no answer.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { startServer, postJson, parseSse, imageMessage, IMAGE_URL, DATA } from "./lib.mjs";

const N = 10;
const OTHER_URL = "data:image/png;base64," + readFileSync(path.join(DATA, "image", "resample_src", "src_200x150_RGB.png")).toString("base64");
let reuse, plain;

before(async () => {
  [reuse, plain] = await Promise.all([
    startServer(["--parallel", "2", "--prefill-chunk", "16"]),
    startServer(["--parallel", "1", "--no-reuse", "--prefill-chunk", "0"]),
  ]);
});
after(async () => {
  for (const s of [reuse, plain]) assert.equal((await s.stop()).code, 0, s.stderr());
});

async function chat(server, messages, extra = {}) {
  const r = await postJson(server.url + "/v1/chat/completions", { messages, max_tokens: N, temperature: 0, ...extra });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

async function reusedTotal(server) {
  const text = await (await fetch(server.url + "/metrics")).text();
  return Number(text.match(/^smolvlm_prompt_tokens_reused_total (\d+)/m)[1]);
}

function followUp(first, answer, question, url = IMAGE_URL) {
  return [...imageMessage(first, url), { role: "assistant", content: answer }, { role: "user", content: question }];
}

test("a follow-up turn reuses the conversation's KV and answers as a fresh prefill does", async () => {
  const t1 = await chat(reuse, imageMessage("Describe this image."));
  const p1 = await chat(plain, imageMessage("Describe this image."));
  assert.deepEqual(t1.smolvlm.token_ids, p1.smolvlm.token_ids);
  assert.equal(t1.usage.prompt_tokens_details.cached_tokens, 0);
  const before = await reusedTotal(reuse);
  const messages = followUp("Describe this image.", t1.choices[0].message.content, "What colour is it?");
  const t2 = await chat(reuse, messages);
  const p2 = await chat(plain, messages);
  assert.deepEqual(t2.smolvlm.token_ids, p2.smolvlm.token_ids);
  assert.equal(t2.usage.prompt_tokens, p2.usage.prompt_tokens);
  assert.ok(t2.usage.prompt_tokens_details.cached_tokens >= t1.usage.prompt_tokens,
    `cached ${t2.usage.prompt_tokens_details.cached_tokens} of ${t2.usage.prompt_tokens}`);
  assert.equal(p2.usage.prompt_tokens_details.cached_tokens, 0, "--no-reuse prefills everything");
  assert.equal(await reusedTotal(reuse) - before, t2.usage.prompt_tokens_details.cached_tokens);
});

test("a new conversation about the same image reuses it; another image does not", async () => {
  await chat(reuse, imageMessage("Describe this image."));
  const same = await chat(reuse, imageMessage("Where was this taken?"));
  const sameRef = await chat(plain, imageMessage("Where was this taken?"));
  assert.deepEqual(same.smolvlm.token_ids, sameRef.smolvlm.token_ids);
  const imageTokens = same.usage.prompt_tokens - 20;  // the image is nearly all of the prompt
  assert.ok(same.usage.prompt_tokens_details.cached_tokens > imageTokens, JSON.stringify(same.usage));
  const other = await chat(reuse, imageMessage("Where was this taken?", OTHER_URL));
  const otherRef = await chat(plain, imageMessage("Where was this taken?", OTHER_URL));
  assert.deepEqual(other.smolvlm.token_ids, otherRef.smolvlm.token_ids);
  assert.ok(other.usage.prompt_tokens_details.cached_tokens < 10, JSON.stringify(other.usage));
});

test("prefill in chunks between running streams changes no answer", async () => {
  const long = { max_tokens: 40, ignore_eos: true };
  const ref = await chat(plain, imageMessage("Tell a long story."), long);
  const refImage = await chat(plain, imageMessage("What is in the picture?", OTHER_URL));
  // The second request is sent once the first stream's first event is in: it is decoding by then.
  const r = await fetch(reuse.url + "/v1/chat/completions", { method: "POST", body: JSON.stringify({
    messages: imageMessage("Tell a long story."), max_tokens: N, temperature: 0, ...long, stream: true }) });
  assert.equal(r.status, 200);
  const reader = r.body.getReader(), utf8 = new TextDecoder();
  let streamed = utf8.decode((await reader.read()).value, { stream: true });
  const second = chat(reuse, imageMessage("What is in the picture?", OTHER_URL));
  for (let part = await reader.read(); !part.done; part = await reader.read()) streamed += utf8.decode(part.value, { stream: true });
  const b = await second;
  const { chunks, done } = parseSse(streamed);
  assert.ok(done, "the stream ended with [DONE]");
  assert.deepEqual(chunks.findLast((c) => c.smolvlm).smolvlm.token_ids, ref.smolvlm.token_ids);
  assert.deepEqual(b.smolvlm.token_ids, refImage.smolvlm.token_ids);
});
