// GET /: a single page for people, embedded in the binary (no build step, nothing from a CDN). It
// talks to the same /v1/chat/completions any client uses: images dropped, picked or pasted become
// data: URLs, answers stream in, the stage timings and kernel path of each answer are shown.
namespace smolvlm::server {

extern const char* const kIndexHtml;
const char* const kIndexHtml = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>smolvlm</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;max-width:820px;margin:0 auto;padding:12px;color:#222}
h1{font-size:18px;margin:4px 0 10px}
#log .turn{margin:8px 0;padding:8px 10px;border-radius:8px;white-space:pre-wrap}
#log .user{background:#eef3ff}#log .assistant{background:#f4f4f4}
#log img{max-height:120px;margin:4px 4px 0 0;border-radius:4px}
.timing{color:#666;font-size:12px;margin-top:4px}
#drop{border:2px dashed #aab;border-radius:8px;padding:10px;margin:8px 0;color:#556}
#drop.over{background:#eef}
#thumbs img{max-height:60px;margin:4px}
textarea{width:100%;box-sizing:border-box;height:70px;font:inherit}
button{font:inherit;padding:4px 14px}
#error{color:#b00020;white-space:pre-wrap}
</style></head><body>
<h1>smolvlm <span id="model"></span></h1>
<div id="log"></div>
<div id="drop">Drop, paste or <label><u>pick</u><input id="file" type="file" accept="image/*" multiple hidden></label> images
<div id="thumbs"></div></div>
<textarea id="prompt" placeholder="Ask about the images (Enter sends, Shift+Enter: new line)"></textarea>
<div><button id="send">Send</button> <button id="stop" disabled>Stop</button> <button id="clear">New chat</button>
<label>max tokens <input id="maxtok" type="number" value="128" min="1" style="width:5em"></label></div>
<div id="error"></div>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let key = sessionStorage.getItem("smolvlm-key") || "";
let history = [];   // OpenAI messages of this conversation
let pending = [];   // data: URLs of images for the next question
let controller = null;

function headers() {
  const h = {"Content-Type": "application/json"};
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}
async function api(path, init, retry = true) {
  const r = await fetch(path, Object.assign({headers: headers()}, init));
  if (r.status === 401 && retry) {
    key = prompt("This server needs an API key:") || "";
    sessionStorage.setItem("smolvlm-key", key);
    return api(path, init, false);
  }
  return r;
}
function addImages(files) {
  for (const f of files) {
    if (!f.type.startsWith("image/")) continue;
    const reader = new FileReader();
    reader.onload = () => {
      pending.push(reader.result);
      const img = document.createElement("img");
      img.src = reader.result;
      $("thumbs").appendChild(img);
    };
    reader.readAsDataURL(f);
  }
}
function turn(role) {
  const d = document.createElement("div");
  d.className = "turn " + role;
  $("log").appendChild(d);
  return d;
}
function showTimings(el, s, usage) {
  if (!s) return;
  const t = s.timings, n = usage ? usage.completion_tokens : s.token_ids.length;
  const rate = t.decode_s > 0 && n > 1 ? ((n - 1) / t.decode_s).toFixed(1) + " tok/s" : "";
  const div = document.createElement("div");
  div.className = "timing";
  div.textContent = `preprocess ${t.preprocess_s.toFixed(3)} s · vision ${t.vision_s.toFixed(3)} s · prefill ` +
    `${t.prefill_s.toFixed(3)} s · decode ${t.decode_s.toFixed(3)} s ${rate} · ${n} tokens · kernels ${s.kernel_path} · ${s.finish_reason}`;
  el.appendChild(div);
}
async function send() {
  const text = $("prompt").value.trim();
  if (!text && !pending.length) return;
  $("error").textContent = "";
  const content = pending.map((url) => ({type: "image_url", image_url: {url}}));
  content.push({type: "text", text});
  const u = turn("user");
  for (const url of pending) { const i = document.createElement("img"); i.src = url; u.appendChild(i); }
  u.appendChild(document.createTextNode(text));
  history.push({role: "user", content});
  pending = []; $("thumbs").innerHTML = ""; $("prompt").value = "";
  const a = turn("assistant");
  const body = document.createElement("span"); body.className = "answer"; a.appendChild(body);
  controller = new AbortController();
  $("send").disabled = true; $("stop").disabled = false;
  let answer = "", last = null, usage = null;
  try {
    const r = await api("/v1/chat/completions", {method: "POST", signal: controller.signal, body: JSON.stringify({
      messages: history, stream: true, stream_options: {include_usage: true}, temperature: 0,
      max_tokens: parseInt($("maxtok").value, 10) || 128})});
    if (!r.ok) { const e = await r.json(); throw new Error(e.error ? e.error.message : r.statusText); }
    const reader = r.body.getReader(), dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const line = buf.slice(0, cut); buf = buf.slice(cut + 2);
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        if (j.usage) usage = j.usage;
        if (j.smolvlm) last = j.smolvlm;
        const d = j.choices && j.choices[0] && j.choices[0].delta;
        if (d && d.content) { answer += d.content; body.textContent = answer; }
      }
    }
    a.dataset.done = "1";
    showTimings(a, last, usage);
  } catch (e) {
    if (e.name !== "AbortError") $("error").textContent = String(e.message || e);
    a.dataset.done = "1";
  }
  history.push({role: "assistant", content: answer});
  controller = null;
  $("send").disabled = false; $("stop").disabled = true;
}
$("send").onclick = send;
$("stop").onclick = () => controller && controller.abort();
$("clear").onclick = () => { history = []; $("log").innerHTML = ""; };
$("prompt").addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); } });
$("file").onchange = (e) => addImages(e.target.files);
const drop = $("drop");
drop.ondragover = (e) => { e.preventDefault(); drop.classList.add("over"); };
drop.ondragleave = () => drop.classList.remove("over");
drop.ondrop = (e) => { e.preventDefault(); drop.classList.remove("over"); addImages(e.dataTransfer.files); };
document.addEventListener("paste", (e) => addImages([...e.clipboardData.items].filter((i) => i.kind === "file").map((i) => i.getAsFile())));
api("/v1/models").then((r) => r.json()).then((j) => {
  const m = j.data && j.data[0];
  if (m) $("model").textContent = "· " + m.id + (m.smolvlm ? " · " + m.smolvlm.kernel_path + " kernels" : "");
}).catch(() => {});
</script></body></html>
)HTML";

}  // namespace smolvlm::server
