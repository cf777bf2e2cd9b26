// webpage drives mcp-bridge's own web page in a real headless Chromium
// (Debian's chromium, driven by playwright-core) the way a person would,
// for the web page test, and reports the text the page showed at each step.
//
// Usage: node webpage.mjs <page-url> <token> <session-id-prefix> <screenshot.png>
//
// Steps: the page asks for a token; a wrong token is refused; the token is
// entered; the live view shows the session whose id starts with the
// prefix; the console connects, lists the tools, calls echo and then slow
// (with progress); a screenshot is saved; the console disconnects. It
// prints one JSON line:
//
//   {steps: {name: text shown, ...}, failed?: "step: error", console: [...], pageErrors: [...]}
//
// Every wait is for something to appear on the page, bounded by
// BROWSER_TIMEOUT_MS (default 30000) per step. Environment: CHROMIUM
// (default /usr/bin/chromium). It exits 0 when every step passed.

import { launch, timeout } from "./chromium.mjs";

const [url, token, prefix, screenshot] = process.argv.slice(2);

const browser = await launch();

const out = { steps: {}, console: [], pageErrors: [] };
let step = "start";
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  const page = await context.newPage();
  page.setDefaultTimeout(timeout);
  page.on("console", (m) => out.console.push(m.type() + ": " + m.text()));
  page.on("pageerror", (e) => out.pageErrors.push(String(e)));
  const text = (sel) => page.locator(sel).innerText();
  const until = (sel, hasText) => page.locator(sel, hasText ? { hasText } : {}).first().waitFor();

  step = "login";
  await page.goto(url, { timeout });
  await until("#login");
  out.steps.login = await text("#login");

  step = "bad token";
  await page.fill("#token", "not-the-token-0123456789");
  await page.click("#token-submit");
  await until("#login-error", "refused");
  out.steps.badToken = await text("#login-error");

  step = "token";
  await page.fill("#token", token);
  await page.click("#token-submit");
  await until("#feed-status", "live");
  out.steps.feedStatus = await text("#feed-status");

  step = "session";
  const row = `#sessions tr[data-session="${prefix}"]`;
  await until(row);
  out.steps.session = await text(row);
  await until("#children article.child");
  out.steps.children = await text("#children");
  out.steps.server = await text("#server");

  step = "connect";
  await page.click("#connect");
  await until("#console-status.ok");
  out.steps.connected = await text("#console-status");
  await until('#tool-list [data-tool="slow"]');
  out.steps.tools = await text("#tool-list");

  step = "echo";
  await page.click('#tool-list [data-tool="echo"]');
  await until("#arg-message");
  out.steps.echoForm = await text("#tool-fields");
  await page.fill("#arg-message", "hello from chromium");
  await page.click("#call");
  await until("#result pre", "hello from chromium");
  out.steps.echo = await text("#result");

  step = "slow";
  await page.click('#tool-list [data-tool="slow"]');
  await until("#arg-delay_ms");
  out.steps.slowForm = await text("#tool-fields");
  await page.fill("#arg-steps", "4");
  await page.fill("#arg-delay_ms", "150");
  await page.click("#call");
  await until("#progress-text", "of 4");
  out.steps.progressSeen = await text("#progress-text");
  await until("#result pre", "Completed 4 steps");
  out.steps.slow = await text("#result");
  out.steps.progress = await text("#progress-text");
  out.steps.notifications = await text("#notifications");

  step = "own session";
  // The console's own session, as the live feed shows it.
  await until("#sessions .tag", "this console");
  out.steps.sessions = await text("#sessions");

  step = "screenshot";
  await page.screenshot({ path: screenshot, fullPage: true });

  step = "disconnect";
  await page.click("#disconnect");
  await until("#console-status", "disconnected");
  out.steps.disconnected = await text("#console-status");
  await context.close();
} catch (e) {
  out.failed = step + ": " + String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
process.exit(out.failed ? 1 : 0);
