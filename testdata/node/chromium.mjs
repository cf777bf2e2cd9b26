// chromium launches the one browser every browser test drives: Debian's
// chromium, headless, through playwright-core, with the flags the project's
// tests use everywhere (no sandbox, no GPU, no background networking, no
// proxy: all traffic stays on 127.0.0.1).
//
// Environment: CHROMIUM (default /usr/bin/chromium); HOST_RULES, passed to
// --host-resolver-rules so test host names resolve to 127.0.0.1;
// BROWSER_TIMEOUT_MS (default 30000), the bound on the launch and, for the
// scripts, on each step.

import { chromium } from "playwright-core";

export const timeout = Number(process.env.BROWSER_TIMEOUT_MS || 30000);

// launch starts the browser. A test that gives up sends SIGTERM: the
// browser is closed then, so that nothing is left behind.
export async function launch() {
  const args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-proxy-server"];
  if (process.env.HOST_RULES) {
    args.push(`--host-resolver-rules=${process.env.HOST_RULES}`);
  }
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args,
    timeout,
  });
  process.on("SIGTERM", async () => {
    await browser.close().catch(() => {});
    process.exit(143);
  });
  return browser;
}
