// browser opens pages in a real headless Chromium (Debian's chromium, driven
// by playwright-core) for mcp-bridge's browser test, and reports what each
// page found.
//
// Usage: node browser.mjs <page-url>...
//
// Each page must set window.mcpResult to a Promise of a JSON-able value.
// For each URL, in a fresh browser context, it prints one JSON line:
//
//   {url, result, console: [lines the page logged], error?}
//
// Environment: CHROMIUM (default /usr/bin/chromium); HOST_RULES, passed
// to --host-resolver-rules so test host names resolve to 127.0.0.1 and no
// traffic leaves the machine; BROWSER_TIMEOUT_MS bounds everything
// (default 30000). It exits 0 when every page produced a result.

import { launch, timeout } from "./chromium.mjs";

const browser = await launch();

let failed = false;
try {
  for (const url of process.argv.slice(2)) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const lines = [];
    page.on("console", (m) => lines.push(m.text()));
    const out = { url };
    try {
      await page.goto(url, { timeout });
      let timer;
      const deadline = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no result within ${timeout} ms`)), timeout);
      });
      out.result = await Promise.race([page.evaluate(() => window.mcpResult), deadline]);
      clearTimeout(timer);
    } catch (e) {
      out.error = String(e);
      failed = true;
    }
    out.console = lines;
    console.log(JSON.stringify(out));
    await context.close();
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
