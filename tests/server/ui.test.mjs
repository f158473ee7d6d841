// The page at / in Debian's headless chromium (puppeteer-core): pick an image, ask, and the streamed
// answer on the page is exactly the text the API gives for the same request; the API key is asked
// for once. A screenshot of the answered page is kept (serve_ui.png in the test's working folder).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import puppeteer from "puppeteer-core";
import { startServer, postJson, imageMessage, IMAGE } from "./lib.mjs";

test("the page answers with the API's text", { timeout: 120000 }, async () => {
  const s = await startServer(["--api-key", "page-key"]);
  const profile = mkdtempSync(path.join(os.tmpdir(), "smolvlm-chromium-"));
  const browser = await puppeteer.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", `--user-data-dir=${profile}`],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 900, height: 700 });
    let asked = 0;
    page.on("dialog", async (d) => {
      ++asked;
      await d.accept("page-key");
    });
    await page.goto(s.url + "/", { waitUntil: "networkidle0" });
    await page.waitForFunction(() => document.getElementById("model").textContent.includes("smolvlm-tiny"));
    const input = await page.$("#file");
    await input.uploadFile(IMAGE);
    await page.waitForSelector("#thumbs img");
    await page.type("#prompt", "Describe this image.");
    await page.$eval("#maxtok", (e) => (e.value = "12"));
    await page.click("#send");
    await page.waitForSelector(".assistant[data-done='1']", { timeout: 60000 });
    const shown = await page.$eval(".assistant .answer", (e) => e.textContent);
    const timing = await page.$eval(".assistant .timing", (e) => e.textContent);
    assert.equal(await page.$eval("#error", (e) => e.textContent), "");
    await page.screenshot({ path: path.join(process.cwd(), "serve_ui.png") });

    const api = await postJson(s.url + "/v1/chat/completions", { messages: imageMessage("Describe this image."), max_tokens: 12,
      temperature: 0 }, { Authorization: "Bearer page-key" });
    assert.equal(api.status, 200, api.text);
    assert.equal(shown, api.json.choices[0].message.content);
    assert.match(timing, /vision .* s .*kernels (scalar|avx2|avx512)/);
    assert.equal(asked, 1, "the key was asked for once");
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
    await s.stop();
  }
});
