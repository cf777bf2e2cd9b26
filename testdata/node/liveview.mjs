// liveview signs in to mcp-bridge's own web page as several principals at
// once, each in a browser context of its own (its own sessionStorage), in a
// real headless Chromium (Debian's chromium, driven by playwright-core),
// and reports what each page's live view showed, for the web page's
// multi-tenancy test.
//
// Usage: node liveview.mjs <pages-json>
//
// pages-json is [{name, url, token, want: [text, ...]}, ...]. For each page the
// token is entered, the feed must go live, and the script waits until
// every want text is in the live view (#live); it then records the text of
// the live view, its sessions table and its children. It prints one JSON
// line:
//
//   {pages: {name: {live, sessions, children}}, failed?: "name: step: error", console: [...], pageErrors: [...]}
//
// Every wait is for something to appear on the page, bounded by
// BROWSER_TIMEOUT_MS (default 30000) per step. Environment: CHROMIUM
// (default /usr/bin/chromium). It exits 0 when every page passed.

import { launch, timeout } from "./chromium.mjs";

const pages = JSON.parse(process.argv[2]);

const browser = await launch();

const out = { pages: {}, console: [], pageErrors: [] };

async function watch({ name, url, token, want }) {
  let step = "open";
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(timeout);
    page.on("console", (m) => out.console.push(name + ": " + m.type() + ": " + m.text()));
    page.on("pageerror", (e) => out.pageErrors.push(name + ": " + String(e)));
    await page.goto(url, { timeout });

    step = "token";
    await page.locator("#login").waitFor();
    await page.fill("#token", token);
    await page.click("#token-submit");
    await page.locator("#feed-status", { hasText: "live" }).waitFor();

    for (const text of want) {
      step = "wait for " + JSON.stringify(text);
      await page.locator("#live", { hasText: text }).waitFor();
    }
    out.pages[name] = {
      live: await page.locator("#live").innerText(),
      sessions: await page.locator("#sessions").innerText(),
      children: await page.locator("#children").innerText(),
    };
  } catch (e) {
    out.failed = out.failed || name + ": " + step + ": " + String(e);
  } finally {
    await context.close();
  }
}

try {
  await Promise.all(pages.map(watch));
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
process.exit(out.failed ? 1 : 0);
