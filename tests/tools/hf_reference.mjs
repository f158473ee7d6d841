#!/usr/bin/env node
// HF tokenizers (the Rust library, through the npm binding installed here by `npm ci --prefix tests/tools`):
// the reference for the differential tokenizer test and the tokenizer benchmark.
//
//   node hf_reference.mjs encode TOKENIZER_JSON[.gz] < in.jsonl > out.jsonl
//     in:  one {"text": "...", "add_special_tokens": bool} per line
//     out: one {"ids": [...], "decoded": "...", "decoded_skip": "..."} per line (or {"error": "..."})
//   node hf_reference.mjs bench TOKENIZER_JSON[.gz] TEXT_FILE CHUNK_BYTES
//     encodes the file in line-aligned chunks of about CHUNK_BYTES, one call each (add_special_tokens=false);
//     prints {"bytes", "chunks", "tokens", "seconds"}
import fs from 'node:fs';
import zlib from 'node:zlib';
import readline from 'node:readline';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('@anush008/tokenizers');

const [mode, file, ...rest] = process.argv.slice(2);
let raw = fs.readFileSync(file);
if (file.endsWith('.gz')) raw = zlib.gunzipSync(raw);
const tok = Tokenizer.fromString(raw.toString('utf8'));

if (mode === 'encode') {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (line === '') continue;
    try {
      const req = JSON.parse(line);
      const enc = await tok.encode(req.text, null, { addSpecialTokens: !!req.add_special_tokens });
      const ids = Array.from(enc.getIds());
      const decoded = await tok.decode(ids, false);
      const decoded_skip = await tok.decode(ids, true);
      process.stdout.write(JSON.stringify({ ids, decoded, decoded_skip }) + '\n');
    } catch (e) {
      process.stdout.write(JSON.stringify({ error: String((e && e.message) || e) }) + '\n');
    }
  }
} else if (mode === 'bench') {
  const text = fs.readFileSync(rest[0], 'utf8');
  const chunkBytes = parseInt(rest[1], 10);
  const chunks = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + chunkBytes);
    const nl = text.indexOf('\n', end);
    end = nl < 0 ? text.length : nl + 1;
    chunks.push(text.slice(start, end));
    start = end;
  }
  let tokens = 0;
  const t0 = process.hrtime.bigint();
  for (const c of chunks) {
    const enc = await tok.encode(c, null, { addSpecialTokens: false });
    tokens += enc.getIds().length;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  process.stdout.write(JSON.stringify({ bytes: Buffer.byteLength(text, 'utf8'), chunks: chunks.length, tokens, seconds }) + '\n');
} else {
  console.error('usage: node hf_reference.mjs encode|bench TOKENIZER_JSON ...');
  process.exit(2);
}
