// approvals drives the approval queue of mcp-bridge's web page in a real
// headless Chromium (Debian's chromium, driven by playwright-core), for
// httpapi's TestWebApprovals: an approver signs in and sees the calls
// held for approval, live; a call held after the page opened appears
// without a reload; the approver approves one with a reason and denies
// others; a call of the approver's own offers no buttons (the approver
// must not be the caller); an admin sees the queue and is offered no
// decision; a principal who is neither sees nothing of it. The page is
// laid out and photographed at each width of shots. It reports what the
// page showed; the Go test judges it.
//
// Usage: node approvals.mjs <plan-json>
//
// plan: {url, approverToken, adminToken, userToken, holdURL (a GET there
//        holds one more call, as a transport would), ids: {alice, bob,
//        own}, shots: {width: path}, failShot}
//
// It prints one JSON line:
//
//   {approver: {cards, own, live, approved, denied, status, error},
//    layout: {width: {innerWidth, scrollWidth, panel, approve, deny, reason, args}},
//    admin: {cards, buttons}, user: {panels, text}, failed?: "step: error",
//    pageErrors: [...]}
//
// Every wait is for something to appear on the page, bounded by
// BROWSER_TIMEOUT_MS (default 30000) per step. It exits 0 when every step
// passed.

import { launch, timeout } from "./chromium.mjs";

const plan = JSON.parse(process.argv[2]);
const browser = await launch();
const out = { approver: {}, admin: {}, user: {}, layout: {}, pageErrors: [] };
let step = "start";
let page;

// signIn opens the page in a fresh context and signs in with token.
async function signIn(token) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const p = await context.newPage();
  p.setDefaultTimeout(timeout);
  p.on("pageerror", (e) => out.pageErrors.push(String(e)));
  await p.goto(plan.url, { timeout });
  await p.locator("#login").waitFor();
  await p.fill("#token", token);
  await p.click("#token-submit");
  await p.locator("#feed-status", { hasText: "live" }).waitFor();
  return p;
}

const card = (id) => page.locator(`#approvals [data-approval="${id}"]`);

async function box(sel) {
  const l = page.locator(sel).first();
  const b = await l.boundingBox();
  return { visible: await l.isVisible(), ...(b || {}) };
}

// layout lays the page out at width, measures the queue and saves a
// screenshot.
async function layout(width, path) {
  await page.setViewportSize({ width: Number(width), height: 900 });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const first = `#approvals [data-approval="${plan.ids.alice}"]`;
  out.layout[width] = {
    panel: await box("#approvals"),
    approve: await box(`${first} button[data-action="approve"]`),
    deny: await box(`${first} button[data-action="deny"]`),
    reason: await box(`${first} input.reason`),
    args: await box(`${first} pre.arguments`),
    ...(await page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth }))),
  };
  await page.screenshot({ path, fullPage: true });
}

try {
  step = "an approver";
  page = await signIn(plan.approverToken);
  await card(plan.ids.alice).waitFor();
  await card(plan.ids.bob).waitFor();
  await card(plan.ids.own).waitFor();
  out.approver.cards = await page.locator("#approvals [data-approval]").allInnerTexts();
  out.approver.own = await card(plan.ids.own).innerText();
  out.approver.ownButtons = await card(plan.ids.own).locator("button").count();

  step = "layout";
  for (const [width, path] of Object.entries(plan.shots)) await layout(width, path);
  await page.setViewportSize({ width: 1280, height: 900 });

  step = "a call held while the page is open";
  const before = await page.locator("#approvals [data-approval]").count();
  const held = await page.evaluate(async (u) => (await fetch(u)).text(), plan.holdURL);
  const live = page.locator(`#approvals [data-approval="${held.trim()}"]`);
  await live.waitFor();
  out.approver.live = await live.innerText();
  out.approver.countBefore = before;

  step = "approve";
  await card(plan.ids.alice).locator("input.reason").fill("checked the path");
  await card(plan.ids.alice).locator('button[data-action="approve"]').click();
  await card(plan.ids.alice).waitFor({ state: "detached" });
  out.approver.approved = await page.locator("#approvals-status").innerText();

  step = "deny";
  await card(plan.ids.bob).locator('button[data-action="deny"]').click();
  await card(plan.ids.bob).waitFor({ state: "detached" });
  await live.locator('button[data-action="deny"]').click();
  await live.waitFor({ state: "detached" });
  out.approver.denied = await page.locator("#approvals-status").innerText();
  out.approver.left = await page.locator("#approvals [data-approval]").count();
  out.approver.error = await page.locator("#approvals-error").innerText();
  await page.context().close();

  step = "an admin";
  page = await signIn(plan.adminToken);
  await card(plan.ids.own).waitFor();
  out.admin.cards = await page.locator("#approvals [data-approval]").count();
  out.admin.buttons = await page.locator("#approvals button").count();
  out.admin.text = await page.locator("#approvals").innerText();
  await page.context().close();

  step = "a principal who is neither";
  page = await signIn(plan.userToken);
  // The first snapshot is rendered (the Server panel), and with it
  // whatever the page builds of the queue.
  await page.locator("#server dt").first().waitFor();
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  out.user.panels = await page.locator("#approvals").count();
  out.user.text = await page.locator("body").innerText();
} catch (e) {
  out.failed = step + ": " + String(e);
  if (page && plan.failShot) await page.screenshot({ path: plan.failShot, fullPage: true }).catch(() => {});
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
process.exit(out.failed ? 1 : 0);
