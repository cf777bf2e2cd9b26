// pagereason opens mcp-bridge's web page in a real headless Chromium
// (Debian's chromium, driven by playwright-core), optionally enters a
// token, waits for a text to appear where the page says why it was
// refused, and reports what the page then shows, for the test that the
// page tells the bridge's reason and keeps what needs no token.
//
// Usage: node pagereason.mjs <case-json>
//
// case-json is {url, token?, where, text}: where is the selector of the
// element that must come to hold text (#login-error, #feed-error). It
// prints one JSON line:
//
//   {shown: {where, clients, clientsVisible, loginVisible, liveVisible, feedStatus}, failed?: "step: error", pageErrors: [...]}
//
// Every wait is for something to appear on the page, bounded by
// BROWSER_TIMEOUT_MS (default 30000). Environment: CHROMIUM (default
// /usr/bin/chromium). It exits 0 when the text appeared.

import { launch, timeout } from "./chromium.mjs";

const c = JSON.parse(process.argv[2]);

const browser = await launch();

const out = { shown: {}, pageErrors: [] };
let step = "open";
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(timeout);
  page.on("pageerror", (e) => out.pageErrors.push(String(e)));
  await page.goto(c.url, { timeout });
  if (c.token) {
    step = "token";
    await page.locator("#login").waitFor();
    await page.fill("#token", c.token);
    await page.click("#token-submit");
  }
  step = "wait for " + JSON.stringify(c.text) + " in " + c.where;
  await page.locator(c.where, { hasText: c.text }).waitFor();
  step = "the client configurations";
  await page.locator("#client-text").filter({ hasText: "mcpServers" }).waitFor();
  out.shown = {
    where: await page.locator(c.where).innerText(),
    clients: await page.locator("#clients").innerText(),
    clientsVisible: await page.locator("#clients").isVisible(),
    loginVisible: await page.locator("#login").isVisible(),
    liveVisible: await page.locator("#live").isVisible(),
    feedStatus: await page.locator("#feed-status").innerText(),
  };
} catch (e) {
  out.failed = step + ": " + String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
process.exit(out.failed ? 1 : 0);
