// webui drives mcp-bridge's own web page in a real headless Chromium
// (Debian's chromium, driven by playwright-core) for the web page's
// feature tests (cmd/mcp-bridge/webui_test.go): the "Connect a client"
// panel, the Server panel, the console's progress bar, cancel, prompts and
// resources, and the layout at desktop and narrow widths, with screenshots.
// It reports what the page showed; the Go test judges it.
//
// Usage: node webui.mjs <plan-json>
//
// plan: {scenario: "single" | "several", url, token?, shots: {width: path},
//        failShot?: path of a screenshot taken when a step fails,
//        resourcesShot?: path of a screenshot of the Resources tab (single)}
//
//   single: sign in, read the endpoints and every client configuration,
//     copy, read the Server panel, connect the console, call echo, slow
//     (progress), slow again (cancel) and a failing tool, get a prompt,
//     read resources (text, blob, template), subscribe, change the
//     resource, unsubscribe; then lay the page out at each width of
//     shots, measure it and save a screenshot.
//   several: (--config, no token) read the Server panel, choose the
//     second server in the panel and read its endpoints and a
//     configuration; screenshots.
//
// It prints one JSON line:
//
//   {steps: {name: value}, layout: {width: {...boxes}}, failed?: "step: error",
//    console: [...], pageErrors: [...]}
//
// Every wait is for something to appear on the page, bounded by
// BROWSER_TIMEOUT_MS (default 30000) per step. Environment: CHROMIUM
// (default /usr/bin/chromium). It exits 0 when every step passed.

import { launch, timeout } from "./chromium.mjs";

const plan = JSON.parse(process.argv[2]);

const browser = await launch();

const out = { steps: {}, layout: {}, console: [], pageErrors: [] };
let step = "start";

// box is an element's bounding box and whether it is visible.
async function box(page, sel) {
  const l = page.locator(sel).first();
  const b = await l.boundingBox();
  return { visible: await l.isVisible(), ...(b || {}) };
}

// layout measures the page at one width and saves a screenshot.
async function layout(page, width, path) {
  await page.setViewportSize({ width: Number(width), height: 900 });
  // Two frames: the layout of the new width is done.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const m = {
    logsLabel: await box(page, 'label[for="log-level"]'),
    logs: await box(page, "#log-level"),
    connect: await box(page, "#connect"),
    disconnect: await box(page, "#disconnect"),
    console: await box(page, "#console"),
    clients: await box(page, "#clients"),
    firstURL: await box(page, "#endpoints code.url"),
    firstCopy: await box(page, "#endpoints button.copy"),
    snippet: await box(page, "#client-text"),
    server: await box(page, "#server"),
    ...(await page.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
    }))),
  };
  await page.screenshot({ path, fullPage: true });
  out.layout[width] = m;
}

async function single(page) {
  const text = (sel) => page.locator(sel).first().innerText();
  const until = (sel, hasText) => page.locator(sel, hasText ? { hasText } : {}).first().waitFor();

  step = "sign in";
  await page.goto(plan.url, { timeout });
  await until("#login");
  await page.fill("#token", plan.token);
  await page.click("#token-submit");
  await until("#feed-status", "live");

  step = "endpoints";
  await until("#endpoints li code.url");
  out.steps.endpoints = await page.locator("#endpoints li").evaluateAll((lis) =>
    lis.map((li) => ({ name: li.querySelector(".name").textContent, url: li.querySelector("code.url").textContent, copy: !!li.querySelector("button.copy") })),
  );
  out.steps.tokenHint = (await page.locator("#token-hint").isVisible()) ? await text("#token-hint") : "";

  step = "client configurations";
  await until("#client-tabs [role=tab]");
  const ids = await page.locator("#client-tabs [role=tab]").evaluateAll((tabs) => tabs.map((t) => t.dataset.snippet));
  out.steps.snippets = [];
  for (const id of ids) {
    await page.click(`#client-tab-${id}`);
    await until(`#client-text[data-snippet="${id}"]`);
    out.steps.snippets.push({
      id,
      title: await text(`#client-tab-${id}`),
      selected: await page.getAttribute(`#client-tab-${id}`, "aria-selected"),
      visible: await page.locator("#client-text").isVisible(),
      where: await text("#client-where"),
      text: await page.locator("#client-text").textContent(),
      note: await text("#client-note"),
    });
  }

  step = "copy";
  await page.locator("#endpoints button.copy").first().click();
  await until("#endpoints button.copy", "Copied");
  out.steps.copiedURL = await page.evaluate(() => navigator.clipboard.readText());
  await page.click("#copy-snippet");
  await until("#copy-snippet", "Copied");
  out.steps.copiedSnippet = await page.evaluate(() => navigator.clipboard.readText());

  step = "server panel";
  await until("#server code.command");
  out.steps.server = await text("#server");

  step = "connect";
  await page.click("#connect");
  await until("#console-status.ok");
  await until('#tool-list [data-tool="slow"]');
  out.steps.tabs = await text("#features .tabs");
  // Every time the progress box shows or hides, in order: "shown",
  // "hidden"...
  await page.evaluate(() => {
    window.progressLog = [];
    const b = document.getElementById("progress-box");
    let was = b.hidden;
    new MutationObserver(() => {
      if (b.hidden !== was) window.progressLog.push((was = b.hidden) ? "hidden" : "shown");
    }).observe(b, { attributes: true, attributeFilter: ["hidden"] });
  });
  const progressLog = () => page.evaluate(() => window.progressLog.splice(0));

  step = "echo";
  await page.click('#tool-list [data-tool="echo"]');
  await page.fill("#arg-message", "hello from chromium");
  await page.click("#call");
  await until("#result pre", "hello from chromium");
  out.steps.echo = { result: await text("#result"), progressHidden: await page.locator("#progress-box").isHidden(), progressLog: await progressLog() };

  step = "slow";
  await page.click('#tool-list [data-tool="slow"]');
  await page.fill("#arg-steps", "3");
  await page.fill("#arg-delay_ms", "150");
  await page.click("#call");
  await until("#progress-box:not([hidden]) #progress-text", "of 3");
  const during = await text("#progress-text");
  await until("#result pre", "Completed 3 steps");
  out.steps.slow = { during, result: await text("#result"), progressHidden: await page.locator("#progress-box").isHidden(), progressLog: await progressLog() };

  step = "cancel";
  await page.fill("#arg-steps", "100");
  await page.fill("#arg-delay_ms", "100");
  await page.click("#call");
  await until("#progress-box:not([hidden]) #progress-text", "of 100");
  await page.click("#cancel");
  await until("#result", "cancelled");
  out.steps.cancel = {
    result: await text("#result"),
    progressHidden: await page.locator("#progress-box").isHidden(),
    cancelHidden: await page.locator("#cancel").isHidden(),
    callEnabled: await page.locator("#call").isEnabled(),
    progressLog: await progressLog(),
  };

  step = "error";
  await page.click('#tool-list [data-tool="test_error_handling"]');
  await page.click("#call");
  await until("#result.error");
  out.steps.error = { result: await text("#result"), progressHidden: await page.locator("#progress-box").isHidden(), progressLog: await progressLog() };

  step = "prompts";
  await page.click("#tab-prompts");
  await until('#prompt-list [data-prompt="test_prompt_with_arguments"]');
  out.steps.promptList = await text("#prompt-list");
  await page.click('#prompt-list [data-prompt="test_prompt_with_arguments"]');
  await page.fill("#prompt-arg-arg1", "alpha");
  await page.fill("#prompt-arg-arg2", "beta");
  await page.click("#get-prompt");
  await until("#prompt-result pre", "arg1='alpha'");
  out.steps.prompt = { form: await text("#prompt-fields"), result: await text("#prompt-result"), visible: await page.locator("#prompt-result").isVisible() };
  await page.click('#prompt-list [data-prompt="test_prompt_with_image"]');
  await page.click("#get-prompt");
  await until("#prompt-result img");
  out.steps.promptImage = { result: await text("#prompt-result"), imageVisible: await page.locator("#prompt-result img").isVisible() };

  step = "resources";
  await page.click("#tab-resources");
  await until('#resource-list [data-uri="test://static-text"]');
  out.steps.resourceList = await text("#resource-list");
  out.steps.templateList = await text("#template-list");
  await page.click('#resource-list [data-uri="test://static-text"]');
  await until("#resource-result pre", "static text resource");
  out.steps.resourceText = { uri: await text("#resource-uri"), result: await text("#resource-result") };
  await page.click('#resource-list [data-uri="test://static-binary"]');
  await until("#resource-result img");
  out.steps.resourceBlob = {
    uri: await text("#resource-uri"),
    result: await text("#resource-result"),
    imageVisible: await page.locator("#resource-result img").isVisible(),
    imageDecoded: await page.locator("#resource-result img").evaluate((img) => img.complete && img.naturalWidth > 0),
  };
  await page.click('#template-list [data-uri-template="test://template/{id}/data"]');
  await page.fill("#template-var-id", "42");
  await page.click("#read-template");
  await until("#resource-result pre", "Data for ID: 42");
  out.steps.resourceTemplate = { uri: await text("#resource-uri"), result: await text("#resource-result") };

  step = "subscribe";
  await page.click('#resource-list [data-uri="test://watched-resource"]');
  await until("#resource-result pre", "revision 0");
  await page.click("#subscribe");
  await until("#subscribe", "Unsubscribe");
  out.steps.subscribed = { button: await text("#subscribe"), pressed: await page.getAttribute("#subscribe", "aria-pressed") };
  await page.click("#tab-tools");
  await page.click('#tool-list [data-tool="touch_resource"]');
  await page.click("#call");
  await until("#result pre", "revision 1");
  await page.click("#tab-resources");
  await until("#notifications li", "notifications/resources/updated");
  await until("#resource-result pre", "revision 1");
  out.steps.updated = { result: await text("#resource-result"), notifications: await text("#notifications") };
  await page.click("#subscribe");
  await until("#subscribe", "Subscribe");
  await until("#notifications li", "unsubscribed from test://watched-resource");
  out.steps.unsubscribed = { button: await text("#subscribe"), pressed: await page.getAttribute("#subscribe", "aria-pressed") };
  if (plan.resourcesShot) await page.screenshot({ path: plan.resourcesShot, fullPage: true });

  step = "layout";
  await page.click("#tab-tools");
  await page.click('#tool-list [data-tool="slow"]');
  for (const [width, path] of Object.entries(plan.shots)) {
    step = "layout at " + width;
    await layout(page, width, path);
  }

  step = "disconnect";
  await page.click("#disconnect");
  await until("#console-status", "disconnected");
  out.steps.disconnected = await text("#console-status");
}

async function several(page) {
  const text = (sel) => page.locator(sel).first().innerText();
  const until = (sel, hasText) => page.locator(sel, hasText ? { hasText } : {}).first().waitFor();

  step = "open";
  await page.goto(plan.url, { timeout });
  await until("#feed-status", "live");

  step = "server panel";
  await until("#server code.command");
  out.steps.server = await text("#server");

  step = "first server";
  await until("#client-server-row:not([hidden])");
  await until("#client-tabs [role=tab]");
  out.steps.first = { endpoints: await text("#endpoints"), snippet: await page.locator("#client-text").textContent() };

  step = "second server";
  await page.selectOption("#client-server", { index: 1 });
  await until("#endpoints code.url", "/servers/b/mcp");
  await page.click("#client-tab-cursor");
  await until("#client-text", '"b": {');
  out.steps.second = { endpoints: await text("#endpoints"), snippet: await page.locator("#client-text").textContent() };

  for (const [width, path] of Object.entries(plan.shots)) {
    step = "layout at " + width;
    await layout(page, width, path);
  }
}

let page;
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(plan.url).origin });
  page = await context.newPage();
  page.setDefaultTimeout(timeout);
  page.on("console", (m) => out.console.push(m.type() + ": " + m.text()));
  page.on("pageerror", (e) => out.pageErrors.push(String(e)));
  if (plan.scenario === "several") await several(page);
  else await single(page);
  await context.close();
} catch (e) {
  out.failed = step + ": " + String(e);
  // What the page looked like then, for whoever reads the failure.
  if (page && plan.failShot) await page.screenshot({ path: plan.failShot, fullPage: true }).catch(() => {});
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
process.exit(out.failed ? 1 : 0);
