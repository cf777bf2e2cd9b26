// modernview drives mcp-bridge's web page in a real headless Chromium
// (Debian's chromium, driven by playwright-core) to see what it shows of
// MCP 2026-07-28 requests: calls running, parked for input and listening.
//
// Usage: node modernview.mjs <page-url> <token> <screenshot.png>
//
// Steps: the token is entered; the "2026-07-28 requests" table shows a call
// parked for its client's input ("waiting for input", with the time left
// before it expires) and a listen ("listening"); a screenshot is saved.
// It prints one JSON line:
//
//   {steps: {name: text shown, ...}, failed?: "step: error", pageErrors: [...]}
//
// Every wait is for something to appear on the page, bounded by
// BROWSER_TIMEOUT_MS (default 30000) per step. Environment: CHROMIUM
// (default /usr/bin/chromium). It exits 0 when every step passed.

import { launch, timeout } from "./chromium.mjs";

const [url, token, screenshot] = process.argv.slice(2);

const browser = await launch();

const out = { steps: {}, pageErrors: [] };
let step = "start";
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  const page = await context.newPage();
  page.setDefaultTimeout(timeout);
  page.on("pageerror", (e) => out.pageErrors.push(String(e)));
  const text = (sel) => page.locator(sel).innerText();
  const until = (sel) => page.locator(sel).first().waitFor();

  step = "token";
  await page.goto(url, { timeout });
  await until("#login");
  await page.fill("#token", token);
  await page.click("#token-submit");

  step = "parked";
  await until('#modern tbody tr[data-state="waiting for input"]');
  out.steps.parked = await text('#modern tbody tr[data-state="waiting for input"]');

  step = "listening";
  await until('#modern tbody tr[data-state="listening"]');
  out.steps.listening = await text('#modern tbody tr[data-state="listening"]');
  out.steps.count = await text("#modern-count");
  out.steps.children = await text("#children");

  step = "screenshot";
  await page.locator("#modern").scrollIntoViewIfNeeded();
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (e) {
  out.failed = step + ": " + String(e).split("\n")[0];
}
await browser.close();
console.log(JSON.stringify(out));
process.exit(out.failed ? 1 : 0);
