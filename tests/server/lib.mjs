// Shared by the server tests: start `smolvlm serve` on a free loopback port, run the CLI for the
// reference answer, and small HTTP helpers. Everything stays on 127.0.0.1.
import { spawn, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";

export const BINARY = process.env.SMOLVLM_BINARY;
export const DATA = process.env.SMOLVLM_TEST_DATA;
export const MODEL = path.join(DATA, "models", "smolvlm-tiny");
// llama-tiny with its embedding padded past the tokenizer (make_padded_vocab.py): after PADDED_PROMPT it
// generates PADDED_ID first, an id the tokenizer cannot print.
export const PADDED_MODEL = path.join(DATA, "models", "llama-tiny-padded");
export const PADDED_PROMPT = "The capital of France is", PADDED_ID = 49300;
export const IMAGE = path.join(DATA, "..", "..", "examples", "flower.jpg");
export const IMAGE_URL = "data:image/jpeg;base64," + readFileSync(IMAGE).toString("base64");
if (!BINARY || !DATA) throw new Error("SMOLVLM_BINARY and SMOLVLM_TEST_DATA must be set");

// Starts the server; resolves once /health answers 200 with { url, proc, stderr(), stop() }.
export async function startServer(args = [], { waitReady = true, model = MODEL, threads = 1 } = {}) {
  const proc = spawn(BINARY, ["serve", "--model", model, "--port", "0", "--threads", String(threads), ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  proc.stderr.on("data", (d) => (err += d));
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    // Bounds that only a hang reaches (the tiny models load in well under a second).
    const timer = setTimeout(() => reject(new Error("server did not start: " + err)), 60000);
    const poll = setInterval(() => {
      const m = err.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve(m[1]);
      }
    }, 20);
    proc.on("exit", () => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error("server exited: " + err));
    });
  });
  if (waitReady) {
    for (const t0 = Date.now(); ; ) {
      const r = await fetch(url + "/health").catch(() => null);
      if (r && r.status === 200) break;
      if (Date.now() - t0 > 60000) throw new Error("server not ready: " + err);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  return {
    url,
    proc,
    exited,
    stderr: () => err,
    async stop(signal = "SIGTERM") {
      if (proc.exitCode === null) proc.kill(signal);
      return exited;
    },
  };
}

// `smolvlm caption --json` for one image and a prompt: the reference answer.
export function caption(prompt, maxTokens, extra = []) {
  const out = execFileSync(BINARY, ["caption", "--model", MODEL, "--threads", "1", "--json", "--max-new-tokens",
    String(maxTokens), "--prompt", prompt, ...extra, IMAGE], { encoding: "utf8" });
  return JSON.parse(out);
}

export function generate(prompt, maxTokens, extra = [], model = MODEL) {
  const out = execFileSync(BINARY, ["generate", "--model", model, "--threads", "1", "--json", "--max-new-tokens",
    String(maxTokens), "--prompt", prompt, ...extra], { encoding: "utf8" });
  return JSON.parse(out);
}

export function imageMessage(prompt, url = IMAGE_URL) {
  return [{ role: "user", content: [{ type: "image_url", image_url: { url } }, { type: "text", text: prompt }] }];
}

export async function postJson(url, body, headers = {}) {
  const r = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, headers: r.headers, text, json };
}

// Reads an SSE answer: the parsed chunks (without [DONE]) and whether [DONE] came.
export function parseSse(text) {
  const chunks = [];
  let done = false;
  for (const block of text.split("\n\n")) {
    if (!block.startsWith("data: ")) continue;
    const data = block.slice(6);
    if (data === "[DONE]") done = true;
    else chunks.push(JSON.parse(data));
  }
  return { chunks, done };
}

// Peak resident memory of a process (kB), from /proc.
export function peakRssKb(pid) {
  const m = readFileSync(`/proc/${pid}/status`, "utf8").match(/VmHWM:\s+(\d+) kB/);
  return m ? Number(m[1]) : -1;
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}
