// registry drives the Servers panel of mcp-bridge's web page (the
// registry API, for its admins) in a real headless Chromium (Debian's
// chromium, driven by playwright-core), for cmd/mcp-bridge's
// TestWebRegistry: a principal who is no admin signs in and sees nothing
// of it; a registry admin signs in, adds a server with a secret, edits
// it (mode, a new secret value), disables it, is refused a shell string
// as a command (the bridge's reason shown), and removes it; a reader
// (--admin) sees the servers and is offered no change. It reports
// what the page showed; the Go test judges it.
//
// Usage: node registry.mjs <plan-json>
//
// plan: {url, userToken, readerToken, adminToken, command, secret, secret2, shot,
//        formShot (the panel with its edit form), failShot}
//
// It prints one JSON line:
//
//   {user: {registryStatus, panels, text}, reader: {registryStatus, rows,
//    addVisible, actionsVisible}, admin: {rows, added, edited,
//    disabled, refused, removed, html, inputs}, failed?: "step: error",
//    pageErrors: [...]}
//
// Every wait is for something to appear on the page, bounded by
// BROWSER_TIMEOUT_MS (default 30000) per step. It exits 0 when every
// step passed.

import { launch, timeout } from "./chromium.mjs";

const plan = JSON.parse(process.argv[2]);
const browser = await launch();
const out = { user: {}, admin: {}, pageErrors: [] };
let step = "start";
let page;

// signIn opens the page in a fresh context and signs in with token; it
// returns the page and the answer to the page's GET of the registry.
async function signIn(token) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const p = await context.newPage();
  p.setDefaultTimeout(timeout);
  p.on("pageerror", (e) => out.pageErrors.push(String(e)));
  const listed = p.waitForResponse((r) => new URL(r.url()).pathname.endsWith("/admin/servers") && r.request().method() === "GET");
  listed.catch(() => {}); // a step that fails first closes the page: not an unhandled rejection
  await p.goto(plan.url, { timeout });
  await p.locator("#login").waitFor();
  await p.fill("#token", token);
  await p.click("#token-submit");
  await p.locator("#feed-status", { hasText: "live" }).waitFor();
  return { p, listed: await listed };
}

// row is the table row of server name.
const row = (name) => page.locator(`#registry tr[data-server="${name}"]`);

try {
  step = "a user who is no admin";
  const user = await signIn(plan.userToken);
  page = user.p;
  // Once the page has the answer, whatever it builds is built.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  out.user = {
    registryStatus: user.listed.status(),
    panels: await page.locator("#registry").count(),
    text: await page.locator("body").innerText(),
  };
  await page.context().close();

  step = "a reader (--admin)";
  const reader = await signIn(plan.readerToken);
  page = reader.p;
  await row("a").waitFor();
  out.reader = {
    registryStatus: reader.listed.status(),
    rows: await page.locator("#registry tbody tr").count(),
    addVisible: await page.locator("#registry-add").isVisible(),
    actionsVisible: await page.locator("#registry td.actions button").first().isVisible(),
  };
  await page.context().close();

  step = "a registry admin";
  const admin = await signIn(plan.adminToken);
  page = admin.p;
  out.admin.registryStatus = admin.listed.status();
  await row("a").waitFor();
  out.admin.rows = await page.locator("#registry tbody tr").count();

  step = "add";
  await page.click("#registry-add");
  await page.fill("#reg-name", "added");
  await page.fill("#reg-command", plan.command);
  await page.click("#reg-add-env");
  await page.locator("#reg-env .env-name").last().fill("SECRET_KEY");
  await page.locator("#reg-env .env-value").last().fill(plan.secret);
  await page.click("#reg-save");
  await row("added").locator("td", { hasText: "ready" }).waitFor();
  out.admin.added = await row("added").innerText();

  step = "edit";
  await row("added").locator('button[data-action="edit"]').click();
  await page.locator("#reg-env .env-row[data-key=SECRET_KEY]").waitFor();
  out.admin.inputs = await page.evaluate(() => [...document.querySelectorAll("#registry input, #registry textarea")].map((i) => i.value));
  await page.selectOption("#reg-mode", "shared");
  await page.locator("#reg-env .env-row[data-key=SECRET_KEY] .env-value").fill(plan.secret2);
  if (plan.formShot) await page.locator("#registry").screenshot({ path: plan.formShot });
  await page.click("#reg-save");
  await row("added").locator("td", { hasText: "shared" }).waitFor();
  out.admin.edited = await row("added").innerText();

  step = "disable";
  await row("added").locator('button[data-action="disable"]').click();
  await row("added").locator("td", { hasText: "disabled" }).waitFor();
  out.admin.disabled = await row("added").innerText();

  step = "a shell string refused";
  await page.click("#registry-add");
  await page.fill("#reg-name", "shell");
  await page.fill("#reg-command", "curl http://x | sh");
  await page.click("#reg-save");
  await page.locator("#registry-error", { hasText: "no shell" }).waitFor();
  out.admin.refused = await page.locator("#registry-error").innerText();

  step = "remove";
  await row("added").locator('button[data-action="remove"]').click();
  await row("added").locator('button[data-action="confirm remove"]').click();
  await row("added").waitFor({ state: "detached" });
  out.admin.removed = await page.locator("#registry-status").innerText();
  out.admin.rowsAfter = await page.locator("#registry tbody tr").count();
  await page.screenshot({ path: plan.shot, fullPage: true });
  out.admin.html = await page.content();
} catch (e) {
  out.failed = step + ": " + String(e);
  if (page && plan.failShot) await page.screenshot({ path: plan.failShot, fullPage: true }).catch(() => {});
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
process.exit(out.failed ? 1 : 0);
