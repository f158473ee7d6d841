// `smolvlm serve` through the official OpenAI client (openai@6.49.0): the answers are exactly what
// `smolvlm caption` / `smolvlm generate` give for the same request.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startServer, caption, generate, imageMessage, MODEL } from "./lib.mjs";

const PROMPT = "Describe this image.";
const N = 12;
let server, client;

before(async () => {
  server = await startServer(["--api-key", "sekrit-key"]);
  client = new OpenAI({ apiKey: "sekrit-key", baseURL: server.url + "/v1", maxRetries: 0, timeout: 60000 });
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, "SIGTERM exits 0: " + server.stderr());
});

test("models lists the served model", async () => {
  const list = await client.models.list();
  const ids = list.data.map((m) => m.id);
  assert.deepEqual(ids, ["smolvlm-tiny"]);
});

test("non-streaming chat with a base64 image gives caption's ids and text", async () => {
  const ref = caption(PROMPT, N);
  const r = await client.chat.completions.create({ model: "smolvlm-tiny", messages: imageMessage(PROMPT), max_tokens: N, temperature: 0 });
  assert.equal(r.object, "chat.completion");
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(r.choices[0].message.content, ref.text);
  assert.deepEqual(r.smolvlm.token_ids, ref.token_ids);
  assert.equal(r.choices[0].finish_reason, ref.finish_reason === "length" ? "length" : "stop");
  assert.equal(r.usage.prompt_tokens, ref.prompt_tokens);
  assert.equal(r.usage.completion_tokens, ref.token_ids.length);
  assert.equal(r.usage.total_tokens, ref.prompt_tokens + ref.token_ids.length);
});

test("streaming chat with include_usage gives the same text, ids and usage", async () => {
  const ref = caption(PROMPT, N);
  const stream = await client.chat.completions.create({ model: "smolvlm-tiny", messages: imageMessage(PROMPT), max_tokens: N,
    temperature: 0, stream: true, stream_options: { include_usage: true } });
  let text = "", finish = null, usage = null, ids = null, first = true, chunks = 0, id = null;
  for await (const c of stream) {
    ++chunks;
    assert.equal(c.object, "chat.completion.chunk");
    id ??= c.id;
    assert.equal(c.id, id, "every chunk carries the same id");
    assert.equal(c.model, "smolvlm-tiny");
    if (c.usage) usage = c.usage;
    if (c.smolvlm) ids = c.smolvlm.token_ids;
    if (c.choices.length) {
      if (first) assert.equal(c.choices[0].delta.role, "assistant");
      first = false;
      text += c.choices[0].delta.content ?? "";
      if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
    }
  }
  assert.ok(chunks > 3, "the answer streamed in pieces");
  assert.equal(text, ref.text);
  assert.deepEqual(ids, ref.token_ids);
  assert.equal(finish, "length");
  const { prompt_tokens_details: details, ...counts } = usage;
  assert.deepEqual(counts, { prompt_tokens: ref.prompt_tokens, completion_tokens: N, total_tokens: ref.prompt_tokens + N });
  // The same prompt as the test before: the slot kept its KV, all but the last token.
  assert.equal(details.cached_tokens, ref.prompt_tokens - 1);
});

test("stop strings end the answer where caption --stop does", async () => {
  const full = caption(PROMPT, N);
  // A stop in the middle of the caption's text.
  const stop = full.text.slice(Math.floor(full.text.length / 2), Math.floor(full.text.length / 2) + 3);
  const ref = caption(PROMPT, N, ["--stop", stop]);
  assert.equal(ref.finish_reason, "stop");
  for (const stream of [false, true]) {
    const req = { model: "smolvlm-tiny", messages: imageMessage(PROMPT), max_tokens: N, temperature: 0, stop: [stop, "never-in-this-text-0"] };
    let text;
    let finish;
    if (stream) {
      text = "";
      for await (const c of await client.chat.completions.create({ ...req, stream: true })) {
        if (c.choices.length) text += c.choices[0].delta.content ?? "";
        if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
      }
    } else {
      const r = await client.chat.completions.create(req);
      text = r.choices[0].message.content;
      finish = r.choices[0].finish_reason;
    }
    assert.equal(text, ref.text, `stream=${stream}`);
    assert.ok(!text.includes(stop));
    assert.equal(finish, "stop");
  }
});

test("multi-turn text chat and the completions endpoint match the CLI", async () => {
  const prompt = "The capital of France is";
  const ref = generate(prompt, N);
  const r = await client.completions.create({ model: "smolvlm-tiny", prompt, max_tokens: N, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.equal(r.choices[0].text, ref.text);
  assert.deepEqual(r.smolvlm.token_ids, ref.token_ids);
  const chat = await client.chat.completions.create({ model: "smolvlm-tiny", max_tokens: 4, temperature: 0, messages: [
    { role: "system", content: "Be brief." }, { role: "user", content: "Hi" }, { role: "assistant", content: "Hello" },
    { role: "user", content: [{ type: "text", text: "And now?" }] }] });
  assert.equal(chat.usage.completion_tokens, 4);
});

test("errors arrive as the client's typed errors with OpenAI's fields", async () => {
  await assert.rejects(client.chat.completions.create({ model: "smolvlm-tiny", messages: imageMessage(PROMPT), n: 2 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.status, 400);
    assert.equal(e.param, "n");
    assert.equal(e.type, "invalid_request_error");
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: "gpt-4o", messages: imageMessage(PROMPT) }), (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError);
    assert.equal(e.code, "model_not_found");
    return true;
  });
  const wrong = new OpenAI({ apiKey: "wrong", baseURL: server.url + "/v1", maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});
