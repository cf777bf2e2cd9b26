// mcp-bridge's web page: a live view of the bridge (its feed, an SSE
// stream read with fetch so that it can carry the Authorization header,
// which EventSource cannot) and a console that is itself an MCP client of
// the bridge's own Streamable HTTP endpoint.
//
// Everything that comes from the bridge or from an MCP server (tool names
// and descriptions, results, stderr lines, principals) is rendered as text
// (text nodes, never innerHTML); the page's Content-Security-Policy is the
// second line of defence.
"use strict";

const TOKEN_KEY = "mcp-bridge-token";
// The version the console asks for; the server may answer with another,
// which the console then sends in MCP-Protocol-Version.
const PROTOCOL_VERSION = "2025-11-25";

const $ = (id) => document.getElementById(id);

const state = {
  config: { servers: [], auth: false },
  snapshot: null,
  skew: 0, // server clock minus ours, from the feed's Date header
  feed: null, // AbortController of the feed's request
  client: null, // the console's McpClient, while connected
  tool: null, // the tool whose form is shown
  prompt: null, // the prompt whose form is shown
  template: null, // the resource template whose form is shown
  resourceShown: null, // the URI of the resource shown
  subscriptions: new Set(), // URIs this session is subscribed to
  call: null, // the tool call under way: {progressToken, ctl, id, cancelled}
  calls: 0,
  snippets: [], // the client configurations of the server chosen
  snippetID: null, // the one shown
};

// ---- helpers ------------------------------------------------------------

// el builds an element; string children become text nodes.
function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k in e) e[k] = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

function withAuth(headers = {}) {
  const t = token();
  if (t) headers["Authorization"] = "Bearer " + t;
  return headers;
}

// fmtDuration: 42s, 3m 07s, 2h 05m, 3d 4h.
function fmtDuration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m " + String(s % 60).padStart(2, "0") + "s";
  const h = Math.floor(m / 60);
  if (h < 24) return h + "h " + String(m % 60).padStart(2, "0") + "m";
  return Math.floor(h / 24) + "d " + (h % 24) + "h";
}

function serverNow() {
  return Date.now() + state.skew;
}

// AuthError is a 401 or 403: the page asks for a token. Its message is
// the bridge's own reason, which says what to do.
class AuthError extends Error {}

// reasonOf is why the bridge refused a request, as it said it: the
// message of its JSON-RPC error body, else its text; "" if it said none.
async function reasonOf(r) {
  const text = await r.text().catch(() => "");
  try {
    const m = JSON.parse(text)?.error?.message;
    if (typeof m === "string" && m) return m;
  } catch {
    // not JSON: the text itself
  }
  return text.trim().slice(0, 500);
}

// readSSE reads a text/event-stream body as it arrives and calls onEvent
// with each event ({event, data, id}) as soon as its blank line is read.
async function readSSE(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let data = [];
  let event = "";
  let id = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    for (;;) {
      const nl = buf.search(/[\r\n]/);
      // A lone \r at the end may be half of a \r\n: wait for more.
      if (nl < 0 || (buf[nl] === "\r" && nl === buf.length - 1)) break;
      const line = buf.slice(0, nl);
      buf = buf.slice(buf[nl] === "\r" && buf[nl + 1] === "\n" ? nl + 2 : nl + 1);
      if (line === "") {
        if (data.length > 0) onEvent({ event: event || "message", data: data.join("\n"), id });
        data = [];
        event = "";
        continue;
      }
      if (line.startsWith(":")) continue; // a comment: keep-alive
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? "" : line.slice(colon + 1);
      if (val.startsWith(" ")) val = val.slice(1);
      if (field === "data") data.push(val);
      else if (field === "event") event = val;
      else if (field === "id") id = val;
    }
  }
}

// ---- token ----------------------------------------------------------------

// askToken signs out and asks for a token, with the bridge's reason if it
// refused one. The client configurations hold no secret: they stay.
function askToken(message) {
  stopFeed();
  disconnect();
  dropRegistry();
  $("app").hidden = false;
  $("live").hidden = true;
  $("console").hidden = true;
  $("forget-token").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  setFeedStatus("signed out", "");
  $("token").focus();
}

// refusedBy is refused for an AuthError of the console's, in the
// bridge's words.
function refusedBy(e) {
  refused((token() ? "The bridge refused this token: " : "This server needs a token: ") + e.message);
}

// refused forgets a token the bridge turned down and asks for another.
function refused(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  askToken(message);
}

function start() {
  $("login").hidden = true;
  $("app").hidden = false;
  $("live").hidden = false;
  $("console").hidden = false;
  $("forget-token").hidden = !token();
  if (state.config.feedRefused) feedRefused(state.config.feedRefused);
  else watchFeed();
  loadRegistry();
}

// feedRefused shows why the live view cannot be opened, in the bridge's
// words; a token that opens none of it is not the page's to forget (the
// console may still use it).
function feedRefused(reason) {
  stopFeed();
  setFeedStatus("live view refused", "error");
  $("feed-error").textContent = reason || "The bridge refused the live view.";
  $("feed-error").hidden = false;
}

// ---- live view --------------------------------------------------------------

function setFeedStatus(text, kind) {
  const s = $("feed-status");
  s.textContent = text;
  s.className = "badge " + (kind || "");
}

function stopFeed() {
  if (state.feed) state.feed.abort();
  state.feed = null;
}

// watchFeed reads the feed, and reads it again when it ends, until the
// page signs out.
async function watchFeed() {
  stopFeed();
  const ctl = new AbortController();
  state.feed = ctl;
  let delay = 1000;
  while (!ctl.signal.aborted) {
    try {
      setFeedStatus("connecting…", "");
      const r = await fetch("ui/events", {
        headers: withAuth({ Accept: "text/event-stream" }),
        cache: "no-store",
        signal: ctl.signal,
      });
      if (r.status === 401) {
        const why = await reasonOf(r);
        refused((token() ? "The bridge refused this token" : "This bridge needs a token") + (why ? ": " + why : "."));
        return;
      }
      if (r.status === 403) {
        feedRefused(await reasonOf(r));
        return;
      }
      if (!r.ok) throw new Error("HTTP " + r.status);
      const date = Date.parse(r.headers.get("Date") || "");
      if (!Number.isNaN(date)) state.skew = date - Date.now();
      setFeedStatus("live", "ok");
      $("feed-error").hidden = true;
      delay = 1000;
      await readSSE(r.body, (ev) => {
        if (ev.event !== "snapshot") return;
        state.snapshot = JSON.parse(ev.data);
        renderSnapshot();
        renderApprovals(state.snapshot.approvals);
        followRegistry(state.snapshot);
      });
      if (!ctl.signal.aborted) setFeedStatus("feed ended, reconnecting…", "warn");
    } catch (e) {
      if (ctl.signal.aborted) return;
      setFeedStatus("feed lost (" + e.message + "), reconnecting…", "warn");
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 15000);
  }
}

function fact(dl, name, value) {
  dl.append(el("dt", {}, name), el("dd", {}, value));
}

function since(iso) {
  return el("span", { dataset: { since: iso } }, fmtDuration(serverNow() - Date.parse(iso)));
}

function ago(iso) {
  return el("span", { dataset: { ago: iso } }, fmtDuration(serverNow() - Date.parse(iso)) + " ago");
}

// until counts down to a time: when a parked call or a session expires.
function until(iso) {
  return el("span", { dataset: { until: iso } }, fmtDuration(Math.max(0, Date.parse(iso) - serverNow())));
}

// tick refreshes the ages and uptimes between snapshots: the feed sends a
// snapshot only when something changed, not as time passes.
function tick() {
  const now = serverNow();
  for (const e of document.querySelectorAll("[data-since]")) {
    e.textContent = fmtDuration(now - Date.parse(e.dataset.since));
  }
  for (const e of document.querySelectorAll("[data-ago]")) {
    e.textContent = fmtDuration(now - Date.parse(e.dataset.ago)) + " ago";
  }
  for (const e of document.querySelectorAll("[data-until]")) {
    e.textContent = fmtDuration(Math.max(0, Date.parse(e.dataset.until) - now));
  }
}

// shellWord quotes an argument for display the way a POSIX shell reads
// it; plain words stay as they are.
function shellWord(a) {
  return /^[A-Za-z0-9_@%+=:,.\/*-]+$/.test(a) ? a : "'" + a.replaceAll("'", "'\\''") + "'";
}

// commandLine shows a command (program and arguments, secrets already
// masked by the bridge) as one line.
function commandLine(argv) {
  return el("code", { class: "command" }, (argv || []).map(shellWord).join(" "));
}

// sandboxView shows a server's sandbox as the bridge enforces it: its
// profile in one line, then each right it asks for, enforced or not.
function sandboxView(sb) {
  if (!sb) return el("div", { class: "sandbox hint" }, "no sandbox: the server can do whatever the bridge's user can");
  const line = [sb.enforce, sb.preset ? "preset " + sb.preset : "", "net " + (sb.net || []).join(", "), sb.limits || "", sb.pinned ? "pinned" : ""];
  const rights = (sb.rights || []).map((r) =>
    el("li", { class: r.enforced ? "" : "busy" }, (r.enforced ? "enforced: " : "NOT enforced: ") + r.right + " (" + (r.enforced ? r.by : r.why) + ")"),
  );
  return el("div", { class: "sandbox" }, el("span", {}, "sandbox: " + line.filter(Boolean).join(" · ")), el("ul", {}, ...rights));
}

// aggregateView shows the aggregate endpoint (--aggregate): its servers
// and their state, and the entries its lists drop, each with its fix.
function aggregateView(dl, agg) {
  const servers = (agg.servers || []).map((s) =>
    el("li", { class: s.state === "ready" ? "" : "busy" }, s.name + ": " + s.state + (s.reason ? " (" + s.reason + ")" : "")),
  );
  fact(dl, "Aggregate", el("span", {}, el("span", { class: "mono" }, agg.path), el("span", { class: "hint" }, " · " + agg.sessions + " sessions, tools named SERVER__NAME"), el("ul", { id: "aggregate-servers" }, ...servers)));
  const problems = (agg.problems || []).map((p) => el("li", { class: "busy" }, p.message));
  fact(dl, "Dropped from the aggregate", problems.length ? el("ul", { id: "aggregate-problems" }, ...problems) : el("span", { id: "aggregate-problems", class: "hint" }, "none (no collision, every name fits)"));
}

function renderSnapshot() {
  const snap = state.snapshot;
  const server = $("server");
  server.replaceChildren();
  if (snap.servers && snap.servers.length) {
    // Several servers (--config): each one's command, mode and sandbox.
    for (const s of snap.servers) fact(server, s.name, el("span", {}, commandLine(s.argv), el("span", { class: "hint" }, " · " + s.mode), sandboxView(s.sandbox)));
  } else {
    fact(server, "Command", commandLine(snap.argv || [snap.command]));
    fact(server, "Mode", snap.mode);
    fact(server, "Sandbox", sandboxView(snap.sandbox));
  }
  fact(server, "Waiting children", String(snap.waitingChildren ?? 0));
  if (snap.aggregate) aggregateView(server, snap.aggregate);

  const mine = state.client && state.client.sid;
  const rows = (snap.sessions || []).map((s) =>
    el(
      "tr",
      { dataset: { session: s.id } },
      el("td", { class: "mono" }, (s.server ? s.server + " · " : "") + s.id + "…", mine && mine.startsWith(s.id) ? el("span", { class: "tag" }, "this console") : null),
      el("td", {}, s.principal || "anonymous"),
      el("td", { class: "mono" }, s.protocolVersion || ""),
      el("td", {}, since(s.created)),
      el("td", {}, ago(s.lastActivity)),
      el("td", { class: s.inFlight > 0 ? "num busy" : "num" }, String(s.inFlight)),
      el("td", { class: "mono" }, s.childPid ? String(s.childPid) : ""),
      el("td", {}, s.streamOpen ? "open" : ""),
      // When the bridge ends it if nothing happens: its idle timeout, or
      // sooner when no client can reach it any more.
      el("td", { class: s.unreachable ? "warn" : "" }, s.expires ? until(s.expires) : "", s.unreachable ? el("span", { class: "hint", title: "its GET stream closed and nothing came since, or it sent nothing after initialized" }, " client gone") : null),
    ),
  );
  $("sessions").tBodies[0].replaceChildren(...rows);
  $("session-count").textContent = "(" + rows.length + ")";
  $("no-sessions").hidden = rows.length > 0;

  // 2026-07-28 requests: running, listening, or parked while their client
  // answers what the server asked (until they expire).
  const modern = (snap.modern || []).map((m) =>
    el(
      "tr",
      { dataset: { state: m.state } },
      el("td", { class: "mono" }, (m.server ? m.server + " · " : "") + m.method + (m.target ? " " + m.target : "")),
      el("td", {}, m.principal || "anonymous"),
      el(
        "td",
        { class: m.state === "waiting for input" ? "busy" : "" },
        m.state,
        m.expires ? el("span", { class: "hint" }, " · expires in ", until(m.expires)) : null,
      ),
      el("td", {}, since(m.started)),
      el("td", { class: "mono" }, (m.childPid ? String(m.childPid) : "") + (m.leased ? " leased" : "")),
    ),
  );
  $("modern").tBodies[0].replaceChildren(...modern);
  $("modern-count").textContent = "(" + modern.length + ")";
  $("no-modern").hidden = modern.length > 0;

  const cards = (snap.children || []).map((c) => {
    const dl = el("dl", { class: "facts" });
    fact(dl, "Uptime", since(c.started));
    fact(dl, "Restarts", String(c.restarts));
    fact(dl, "Sessions", String(c.sessions));
    if (c.identity) fact(dl, "Identity", c.identity);
    const tail = c.stderrTail || [];
    return el(
      "article",
      { class: "child", dataset: { pid: String(c.pid) } },
      el("h3", {}, (c.server ? c.server + " · " : "") + "pid " + c.pid),
      dl,
      el(
        "pre",
        { class: "stderr", title: "last lines of stderr" },
        // A process that serves every principal mixes their traffic on
        // stderr: the bridge shows it to admins only.
        c.stderrHidden
          ? "(stderr hidden: this process serves every principal; admins see it)"
          : tail.length
            ? tail.join("\n")
            : "(nothing on stderr)",
      ),
    );
  });
  $("children").replaceChildren(...cards);
  $("child-count").textContent = "(" + cards.length + ")";
  $("no-children").hidden = cards.length > 0;
}

class RpcError extends Error {
  constructor(err) {
    super(err.message + " (" + err.code + ")");
    this.rpc = err;
  }
}

class McpClient {
  constructor(url, onMessage) {
    this.url = url;
    this.onMessage = onMessage; // notifications and server requests
    this.sid = null;
    this.version = null;
    this.nextId = 1;
    this.listening = null; // AbortController of the GET stream
  }

  headers(extra) {
    const h = withAuth({ Accept: "application/json, text/event-stream", ...extra });
    if (this.sid) h["Mcp-Session-Id"] = this.sid;
    if (this.version) h["MCP-Protocol-Version"] = this.version;
    return h;
  }

  // post sends one message and hands every message of the answer (one
  // JSON body, or an SSE stream read as it arrives) to onMessage, until
  // signal (if any) aborts it.
  async post(msg, onMessage, signal) {
    const r = await fetch(this.url, {
      method: "POST",
      headers: this.headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(msg),
      signal,
    });
    if (r.status === 401 || r.status === 403) throw new AuthError((await reasonOf(r)) || "HTTP " + r.status);
    if (msg.method === "initialize" && r.ok) this.sid = r.headers.get("Mcp-Session-Id");
    const ctype = r.headers.get("Content-Type") || "";
    if (!r.ok) {
      let detail = "";
      if (ctype.startsWith("application/json")) detail = (await r.json().catch(() => ({})))?.error?.message || "";
      throw new Error("HTTP " + r.status + (detail ? ": " + detail : ""));
    }
    if (ctype.startsWith("text/event-stream")) {
      await readSSE(r.body, (ev) => {
        if (ev.data) onMessage(JSON.parse(ev.data));
      });
    } else if (ctype.startsWith("application/json")) {
      for (const m of [].concat(await r.json())) onMessage(m);
    }
  }

  // request sends a request and returns its result; notifications and
  // server requests that come first go to the console. opts.signal
  // aborts it (the caller sends notifications/cancelled first, with the
  // id opts.onId was told).
  async request(method, params, opts = {}) {
    const id = this.nextId++;
    if (opts.onId) opts.onId(id);
    let response = null;
    await this.post(
      { jsonrpc: "2.0", id, method, params },
      (m) => {
        if (m.id === id && ("result" in m || "error" in m)) response = m;
        else this.dispatch(m);
      },
      opts.signal,
    );
    if (!response) throw new Error("the stream ended without a response to " + method);
    if (response.error) throw new RpcError(response.error);
    return response.result;
  }

  notify(method, params) {
    const msg = { jsonrpc: "2.0", method };
    if (params) msg.params = params;
    return this.post(msg, (m) => this.dispatch(m));
  }

  dispatch(m) {
    this.onMessage(m);
    if (m.method && m.id !== undefined) this.answer(m);
  }

  // answer replies to a request of the server. The console has no LLM to
  // sample and no forms for elicitation: it says so, and answers pings.
  answer(req) {
    const reply =
      req.method === "ping"
        ? { jsonrpc: "2.0", id: req.id, result: {} }
        : { jsonrpc: "2.0", id: req.id, error: { code: -32601, message: "the mcp-bridge web console does not support " + req.method } };
    this.post(reply, (m) => this.dispatch(m)).catch((e) => note("error", "answer to " + req.method + ": " + e.message));
  }

  async connect(logLevel) {
    const init = await this.request("initialize", {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: {},
      clientInfo: { name: "mcp-bridge web console", version: "1" },
    });
    this.version = init.protocolVersion;
    this.init = init;
    await this.notify("notifications/initialized");
    if (logLevel && init.capabilities && init.capabilities.logging) {
      await this.request("logging/setLevel", { level: logLevel });
    }
    this.listen();
    return init;
  }

  // listen opens the GET stream, where the server sends what belongs to
  // no request (list changes, resource updates). A bridge or server
  // without one answers 405, which is fine.
  async listen() {
    const ctl = new AbortController();
    this.listening = ctl;
    try {
      const r = await fetch(this.url, { headers: this.headers({ Accept: "text/event-stream" }), signal: ctl.signal });
      if (r.ok && (r.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
        await readSSE(r.body, (ev) => {
          if (ev.data) this.dispatch(JSON.parse(ev.data));
        });
      }
    } catch (e) {
      if (!ctl.signal.aborted) note("stream", "GET stream: " + e.message);
    }
  }

  // close ends the session (DELETE), as the spec asks of a client that
  // no longer needs it.
  async close() {
    if (this.listening) this.listening.abort();
    if (!this.sid) return;
    const headers = this.headers();
    this.sid = null;
    await fetch(this.url, { method: "DELETE", headers }).catch(() => {});
  }
}

// note adds a line to the notifications list.
function note(kind, text, method) {
  const li = el(
    "li",
    { class: kind, dataset: { method: method || "" } },
    el("time", {}, new Date().toLocaleTimeString()),
    " ",
    el("b", {}, method || kind),
    " ",
    text,
  );
  const list = $("notifications");
  list.append(li);
  list.scrollTop = list.scrollHeight;
}

function onServerMessage(m) {
  if (!m.method) return;
  const p = m.params || {};
  switch (m.method) {
    case "notifications/progress": {
      let text = p.progress + (p.total !== undefined ? "/" + p.total : "");
      if (p.message) text += " " + p.message;
      note("progress", text, m.method);
      // The bar is for the call under way, and only once it reports
      // progress: a call that reports none never shows it.
      if (state.call && p.progressToken === state.call.progressToken) {
        const bar = $("progress");
        if (p.total !== undefined) {
          bar.max = p.total;
          bar.value = p.progress;
        } else {
          bar.removeAttribute("value"); // indeterminate
        }
        $("progress-text").textContent = text;
        $("progress-box").hidden = false;
      }
      break;
    }
    case "notifications/message":
      note("log " + (p.level || ""), (p.logger ? p.logger + ": " : "") + (typeof p.data === "string" ? p.data : JSON.stringify(p.data)), m.method);
      break;
    case "notifications/resources/updated":
      note("notification", p.uri || "", m.method);
      // The resource shown changed: show it as it is now.
      if (state.client && state.resourceShown === p.uri && state.subscriptions.has(p.uri)) readResource(p.uri);
      break;
    case "notifications/tools/list_changed":
    case "notifications/prompts/list_changed":
    case "notifications/resources/list_changed":
      note("notification", "", m.method);
      if (state.client) refreshList(m.method.split("/")[1]).catch((e) => note("error", e.message));
      break;
    default:
      note(m.id !== undefined ? "request" : "notification", Object.keys(p).length ? JSON.stringify(p) : "", m.method);
  }
}

function consoleServer() {
  return state.config.servers[$("server-select").selectedIndex] || state.config.servers[0];
}

function serverURL() {
  // Relative to the page, so a proxy that serves the bridge under a
  // prefix keeps working (and the page's CSP allows only its origin).
  return new URL(consoleServer().path.replace(/^\//, ""), document.baseURI).toString();
}

function setConsoleStatus(text, kind) {
  const s = $("console-status");
  s.textContent = text;
  s.className = kind || "hint";
}

async function connect() {
  await disconnect();
  const server = consoleServer();
  const client = new McpClient(serverURL(), onServerMessage);
  setConsoleStatus("connecting to " + server.name + "…");
  $("connect").disabled = true;
  try {
    const init = await client.connect($("log-level").value);
    state.client = client;
    const info = init.serverInfo || {};
    setConsoleStatus(
      "connected to " + server.name + " (" + (info.name || "?") + " " + (info.version || "") + "), " +
        (client.sid ? "session " + client.sid.slice(0, 8) + "…" : "no session (stateless)") + ", protocol " + client.version,
      "ok",
    );
    $("disconnect").disabled = false;
    if (state.snapshot) renderSnapshot(); // mark this console's session
    const caps = init.capabilities || {};
    for (const kind of ["tools", "prompts", "resources"]) {
      const tab = $("tab-" + kind);
      tab.disabled = !caps[kind];
      tab.title = caps[kind] ? "" : "the server offers no " + kind;
      $(kind.replace(/s$/, "") + "-count").textContent = "";
    }
    $("features").hidden = false;
    showTab(caps.tools || !(caps.prompts || caps.resources) ? "tools" : caps.prompts ? "prompts" : "resources");
    // A list that fails says so and leaves the others.
    await Promise.all(["tools", "prompts", "resources"].filter((k) => caps[k]).map((k) => refreshList(k).catch((e) => note("error", k + ": " + e.message))));
  } catch (e) {
    if (state.client === client) state.client = null;
    await client.close();
    $("connect").disabled = false;
    $("disconnect").disabled = true;
    if (e instanceof AuthError) {
      refusedBy(e);
      return;
    }
    setConsoleStatus("cannot connect: " + e.message, "error");
  }
}

async function disconnect() {
  const client = state.client;
  state.client = null;
  state.tool = state.prompt = state.template = state.resourceShown = null;
  state.subscriptions.clear();
  if (state.call) state.call.ctl.abort();
  $("features").hidden = true;
  for (const id of ["tool-form", "result-box", "prompt-form", "prompt-result-box", "template-form", "resource-result-box"]) $(id).hidden = true;
  $("connect").disabled = false;
  $("disconnect").disabled = true;
  if (client) {
    await client.close();
    setConsoleStatus("disconnected", "hint");
  }
}

// showTab shows one of the console's tabs: tools, prompts, resources.
function showTab(kind) {
  for (const k of ["tools", "prompts", "resources"]) {
    $("tab-" + k).setAttribute("aria-selected", String(k === kind));
    $(k + "-box").hidden = k !== kind;
  }
}

// listAll pages through a list method and returns every item of key.
async function listAll(method, key) {
  const items = [];
  let cursor;
  do {
    const res = await state.client.request(method, cursor ? { cursor } : {});
    items.push(...(res[key] || []));
    cursor = res.nextCursor;
  } while (cursor);
  return items;
}

// refreshList lists the server's tools, prompts or resources (and
// resource templates) again.
async function refreshList(kind) {
  switch (kind) {
    case "tools":
      return listTools();
    case "prompts":
      return listPrompts();
    case "resources":
      return listResources();
  }
}

// itemButtons renders items as buttons, each marked with data-ATTR =
// idOf(item) (markSelected finds it so), labelled label(item).
function itemButtons(list, items, attr, idOf, label, onClick) {
  list.replaceChildren(
    ...items.map((it) =>
      el("li", {}, el("button", { type: "button", class: "tool", title: it.description || "", dataset: { [attr]: idOf(it) }, onclick: () => onClick(it) }, label(it))),
    ),
  );
}

function markSelected(list, attr, value) {
  for (const b of list.querySelectorAll("button")) b.classList.toggle("selected", b.dataset[attr] === value);
}

async function listTools() {
  const tools = await listAll("tools/list", "tools");
  itemButtons($("tool-list"), tools, "tool", (t) => t.name, (t) => t.name, showTool);
  $("tool-count").textContent = "(" + tools.length + ")";
}

// schemaType is a property's type, ignoring "null" in a type list.
function schemaType(p) {
  if (Array.isArray(p.type)) return p.type.find((t) => t !== "null");
  if (!p.type && Array.isArray(p.enum)) return "string";
  return p.type;
}

// field is a labelled form field: label (with the name, a required mark
// and a type), the input, and the description.
function field(input, name, required, type, description) {
  return el(
    "div",
    { class: "field" },
    el("label", { htmlFor: input.id }, name, required ? el("span", { class: "required", title: "required" }, " *") : null, type ? el("span", { class: "type" }, " " + type) : null),
    input,
    description ? el("small", { class: "hint" }, description) : null,
  );
}

// showTool renders a form from the tool's input schema: strings, numbers,
// integers and booleans get inputs of their own, anything else a JSON
// text area; required properties are marked and enforced.
function showTool(tool) {
  state.tool = tool;
  markSelected($("tool-list"), "tool", tool.name);
  $("tool-name").textContent = tool.title || tool.name;
  $("tool-description").textContent = tool.description || "";
  const schema = tool.inputSchema || {};
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([name, p]) => {
    const type = schemaType(p) || "json";
    let input;
    if (type === "boolean") {
      input = el("input", { type: "checkbox", checked: p.default === true });
    } else if (type === "number" || type === "integer") {
      input = el("input", { type: "number", step: type === "integer" ? "1" : "any" });
      if (p.minimum !== undefined) input.min = p.minimum;
      if (p.maximum !== undefined) input.max = p.maximum;
      if (typeof p.default === "number") input.value = p.default;
    } else if (type === "string" && Array.isArray(p.enum)) {
      input = el("select", {}, required.has(name) ? null : el("option", { value: "" }, ""), ...p.enum.map((v) => el("option", { value: v }, v)));
      if (p.default !== undefined) input.value = p.default;
    } else if (type === "string") {
      input = el("input", { type: "text", spellcheck: false });
      if (typeof p.default === "string") input.value = p.default;
    } else {
      input = el("textarea", { rows: 3, placeholder: "JSON (" + type + ")", spellcheck: false });
    }
    input.id = "arg-" + name;
    input.name = name;
    input.dataset.kind = type === "string" || type === "number" || type === "integer" || type === "boolean" ? type : "json";
    if (required.has(name) && type !== "boolean") input.required = true;
    return field(input, name, required.has(name), type, p.description);
  });
  $("tool-fields").replaceChildren(...(fields.length ? fields : [el("p", { class: "hint" }, "No arguments.")]));
  $("tool-form").hidden = false;
}

// toolArguments reads the form; empty optional fields are left out, so
// the server applies its defaults.
function toolArguments() {
  const required = new Set((state.tool.inputSchema || {}).required || []);
  const args = {};
  for (const input of $("tool-fields").querySelectorAll("[data-kind]")) {
    const name = input.name;
    switch (input.dataset.kind) {
      case "boolean":
        if (input.checked || required.has(name)) args[name] = input.checked;
        break;
      case "number":
      case "integer": {
        if (input.value === "") break;
        const n = Number(input.value);
        if (Number.isNaN(n) || (input.dataset.kind === "integer" && !Number.isInteger(n))) throw new Error(name + ": not " + (input.dataset.kind === "integer" ? "an integer" : "a number"));
        args[name] = n;
        break;
      }
      case "string":
        if (input.value !== "" || required.has(name)) args[name] = input.value;
        break;
      default:
        if (input.value.trim() === "") break;
        try {
          args[name] = JSON.parse(input.value);
        } catch (e) {
          throw new Error(name + ": not JSON: " + e.message);
        }
    }
  }
  return args;
}

async function callTool() {
  const tool = state.tool;
  const box = $("result");
  $("result-box").hidden = false;
  let args;
  try {
    args = toolArguments();
  } catch (e) {
    box.replaceChildren(el("p", { class: "error" }, e.message));
    return;
  }
  // The progress token asks the server for notifications/progress, which
  // arrive on this call's own SSE response before its result; the bar
  // shows when the first one does.
  const call = { progressToken: "console-" + ++state.calls, ctl: new AbortController(), id: null, cancelled: false };
  state.call = call;
  $("progress").removeAttribute("value");
  $("progress-text").textContent = "";
  $("progress-box").hidden = true;
  $("call").disabled = true;
  $("cancel").hidden = false;
  box.className = "";
  box.replaceChildren(el("p", { class: "hint" }, "calling " + tool.name + "…"));
  const client = state.client;
  try {
    const res = await client.request("tools/call", { name: tool.name, arguments: args, _meta: { progressToken: call.progressToken } }, { signal: call.ctl.signal, onId: (id) => (call.id = id) });
    renderResult(tool.name, res);
  } catch (e) {
    if (e instanceof AuthError) {
      refusedBy(e);
      return;
    }
    box.className = "error";
    box.replaceChildren(el("p", { class: "error" }, call.cancelled ? tool.name + " cancelled" : tool.name + " failed: " + e.message));
  } finally {
    // Whatever the end (a result, an error, a cancel), the call no
    // longer runs: no progress to show.
    if (state.call === call) state.call = null;
    $("progress-box").hidden = true;
    $("cancel").hidden = true;
    $("call").disabled = false;
  }
}

// cancelCall cancels the call under way as MCP asks: a
// notifications/cancelled naming its request, after which the console
// stops waiting for the answer (the server may send none).
function cancelCall() {
  const call = state.call;
  if (!call || call.cancelled) return;
  call.cancelled = true;
  const done = state.client && call.id !== null
    ? state.client.notify("notifications/cancelled", { requestId: call.id, reason: "cancelled in the web console" }).catch((e) => note("error", "cancel: " + e.message))
    : Promise.resolve();
  done.finally(() => call.ctl.abort());
}

// resourceContents renders the contents of a resource: text as text, an
// image or audio blob as one, any other blob by its size.
function resourceContents(r) {
  const label = (r.uri || "") + (r.mimeType ? " (" + r.mimeType + ")" : "");
  if (typeof r.text === "string") return [el("p", { class: "hint" }, label), el("pre", { class: "content text" }, r.text)];
  const blob = r.blob || "";
  const size = Math.floor((blob.length * 3) / 4) - (blob.endsWith("==") ? 2 : blob.endsWith("=") ? 1 : 0);
  const out = [el("p", { class: "hint" }, label + ": " + size + " bytes")];
  const mime = r.mimeType || "";
  if (/^image\/(png|jpeg|gif|webp|bmp)$/.test(mime)) out.push(el("img", { class: "content blob", alt: "image " + (r.uri || ""), src: "data:" + mime + ";base64," + blob }));
  else if (mime.startsWith("audio/")) out.push(el("audio", { class: "content blob", controls: true, src: "data:" + mime + ";base64," + blob }));
  else out.push(el("pre", { class: "content blob" }, blob.length > 240 ? blob.slice(0, 240) + "…" : blob));
  return out;
}

// contentBlock renders one content block of a tool result or a prompt
// message.
function contentBlock(c) {
  switch (c.type) {
    case "text":
      return [el("pre", { class: "content text" }, c.text)];
    case "image":
      return [el("img", { class: "content", alt: "image " + c.mimeType, src: "data:" + c.mimeType + ";base64," + c.data })];
    case "audio":
      return [el("audio", { class: "content", controls: true, src: "data:" + c.mimeType + ";base64," + c.data })];
    case "resource":
      return resourceContents(c.resource || {});
    case "resource_link":
      return [el("pre", { class: "content resource" }, "link: " + c.uri + (c.name ? " (" + c.name + ")" : ""))];
    default:
      return [el("pre", { class: "content" }, JSON.stringify(c, null, 2))];
  }
}

function renderResult(name, res) {
  const box = $("result");
  box.className = res.isError ? "error" : "ok";
  const parts = [el("p", { class: "hint" }, name + (res.isError ? " returned an error" : " returned"))];
  for (const c of res.content || []) parts.push(...contentBlock(c));
  if (res.structuredContent !== undefined) {
    parts.push(el("p", { class: "hint" }, "structured content"), el("pre", { class: "content structured" }, JSON.stringify(res.structuredContent, null, 2)));
  }
  box.replaceChildren(...parts);
}

// ---- console: prompts ------------------------------------------------------

async function listPrompts() {
  const prompts = await listAll("prompts/list", "prompts");
  itemButtons($("prompt-list"), prompts, "prompt", (p) => p.name, (p) => p.title || p.name, showPrompt);
  $("prompt-count").textContent = "(" + prompts.length + ")";
  $("no-prompts").hidden = prompts.length > 0;
}

function showPrompt(prompt) {
  state.prompt = prompt;
  markSelected($("prompt-list"), "prompt", prompt.name);
  $("prompt-name").textContent = prompt.title || prompt.name;
  $("prompt-description").textContent = prompt.description || "";
  const fields = (prompt.arguments || []).map((a) => {
    const input = el("input", { type: "text", id: "prompt-arg-" + a.name, name: a.name, spellcheck: false, required: !!a.required });
    return field(input, a.title || a.name, a.required, null, a.description);
  });
  $("prompt-fields").replaceChildren(...(fields.length ? fields : [el("p", { class: "hint" }, "No arguments.")]));
  $("prompt-form").hidden = false;
}

async function getPrompt() {
  const prompt = state.prompt;
  const args = {};
  for (const input of $("prompt-fields").querySelectorAll("input")) {
    if (input.value !== "" || input.required) args[input.name] = input.value;
  }
  const box = $("prompt-result");
  $("prompt-result-box").hidden = false;
  box.className = "";
  box.replaceChildren(el("p", { class: "hint" }, "getting " + prompt.name + "…"));
  try {
    const res = await state.client.request("prompts/get", { name: prompt.name, arguments: args });
    const parts = [el("p", { class: "hint" }, prompt.name + (res.description ? ": " + res.description : ""))];
    for (const m of res.messages || []) {
      parts.push(el("div", { class: "message" }, el("span", { class: "role" }, m.role), ...contentBlock(m.content || {})));
    }
    box.className = "ok";
    box.replaceChildren(...parts);
  } catch (e) {
    if (e instanceof AuthError) return refusedBy(e);
    box.className = "error";
    box.replaceChildren(el("p", { class: "error" }, prompt.name + " failed: " + e.message));
  }
}

// ---- console: resources ----------------------------------------------------

async function listResources() {
  const [resources, templates] = await Promise.all([
    listAll("resources/list", "resources"),
    listAll("resources/templates/list", "resourceTemplates").catch(() => []),
  ]);
  itemButtons($("resource-list"), resources, "uri", (r) => r.uri, (r) => r.title || r.name || r.uri, (r) => {
    // A listed resource, not a template's: the template's form goes.
    state.template = null;
    markSelected($("template-list"), "uriTemplate", null);
    $("template-form").hidden = true;
    readResource(r.uri);
  });
  itemButtons($("template-list"), templates, "uriTemplate", (t) => t.uriTemplate, (t) => t.title || t.name || t.uriTemplate, showTemplate);
  $("resource-count").textContent = "(" + (resources.length + templates.length) + ")";
  $("no-resources").hidden = resources.length > 0;
  $("no-templates").hidden = templates.length > 0;
}

// templateVariables are the names in a URI template (RFC 6570).
function templateVariables(t) {
  const names = [];
  for (const m of t.matchAll(/\{([+#./;?&]?)([^}]+)\}/g)) {
    for (const v of m[2].split(",")) names.push(v.replace(/[:*].*$/, ""));
  }
  return [...new Set(names)];
}

// expandTemplate expands a URI template (RFC 6570 levels 1 to 3: simple,
// reserved and fragment expansion, labels, path segments, parameters and
// queries) with the form's values; an empty value is left out.
function expandTemplate(t, values) {
  const ops = {
    "": { first: "", sep: ",", named: false, reserved: false },
    "+": { first: "", sep: ",", named: false, reserved: true },
    "#": { first: "#", sep: ",", named: false, reserved: true },
    ".": { first: ".", sep: ".", named: false, reserved: false },
    "/": { first: "/", sep: "/", named: false, reserved: false },
    ";": { first: ";", sep: ";", named: true, reserved: false },
    "?": { first: "?", sep: "&", named: true, reserved: false },
    "&": { first: "&", sep: "&", named: true, reserved: false },
  };
  return t.replace(/\{([+#./;?&]?)([^}]+)\}/g, (_, op, list) => {
    const o = ops[op];
    const parts = [];
    for (const spec of list.split(",")) {
      const name = spec.replace(/[:*].*$/, "");
      const v = values[name];
      if (v === undefined || v === "") continue;
      const enc = o.reserved ? encodeURI(v) : encodeURIComponent(v);
      parts.push(o.named ? name + "=" + enc : enc);
    }
    return parts.length ? o.first + parts.join(o.sep) : "";
  });
}

function showTemplate(t) {
  state.template = t;
  markSelected($("template-list"), "uriTemplate", t.uriTemplate);
  markSelected($("resource-list"), "uri", null);
  $("template-name").textContent = (t.title || t.name) + " · " + t.uriTemplate;
  $("template-description").textContent = t.description || "";
  const fields = templateVariables(t.uriTemplate).map((v) => field(el("input", { type: "text", id: "template-var-" + v, name: v, spellcheck: false }), v, false, null, null));
  $("template-fields").replaceChildren(...fields);
  $("template-form").hidden = false;
}

function readTemplate() {
  const values = {};
  for (const input of $("template-fields").querySelectorAll("input")) values[input.name] = input.value;
  return readResource(expandTemplate(state.template.uriTemplate, values));
}

// readResource reads uri and shows its contents, with a subscribe
// button when the server takes subscriptions.
async function readResource(uri) {
  state.resourceShown = uri;
  if (!state.template) markSelected($("resource-list"), "uri", uri);
  $("resource-result-box").hidden = false;
  $("resource-uri").textContent = uri;
  const caps = (state.client && state.client.init.capabilities) || {};
  const sub = $("subscribe");
  sub.hidden = !(caps.resources && caps.resources.subscribe);
  renderSubscribe(uri);
  const box = $("resource-result");
  box.className = "";
  box.replaceChildren(el("p", { class: "hint" }, "reading " + uri + "…"));
  try {
    const res = await state.client.request("resources/read", { uri });
    if (state.resourceShown !== uri) return; // another one was asked for since
    const parts = [];
    for (const c of res.contents || []) parts.push(...resourceContents(c));
    box.className = "ok";
    box.replaceChildren(...(parts.length ? parts : [el("p", { class: "hint" }, "(no contents)")]));
  } catch (e) {
    if (e instanceof AuthError) return refusedBy(e);
    box.className = "error";
    box.replaceChildren(el("p", { class: "error" }, "reading " + uri + " failed: " + e.message));
  }
}

function renderSubscribe(uri) {
  const on = state.subscriptions.has(uri);
  const sub = $("subscribe");
  sub.textContent = on ? "Unsubscribe" : "Subscribe";
  sub.setAttribute("aria-pressed", String(on));
}

// toggleSubscription subscribes to the resource shown, or unsubscribes;
// its updates arrive on the session's GET stream.
async function toggleSubscription() {
  const uri = state.resourceShown;
  const on = state.subscriptions.has(uri);
  const sub = $("subscribe");
  sub.disabled = true;
  try {
    await state.client.request(on ? "resources/unsubscribe" : "resources/subscribe", { uri });
    if (on) state.subscriptions.delete(uri);
    else state.subscriptions.add(uri);
    note("subscription", (on ? "unsubscribed from " : "subscribed to ") + uri);
  } catch (e) {
    if (e instanceof AuthError) return refusedBy(e);
    note("error", (on ? "unsubscribe " : "subscribe ") + uri + ": " + e.message);
  } finally {
    sub.disabled = false;
    if (state.resourceShown === uri) renderSubscribe(uri);
  }
}

// ---- connect a client --------------------------------------------------------

// publicURL is the full URL of an absolute path of the bridge, as clients
// reach it: under --public-url when the bridge has one, else under the
// page's own URL (which keeps a proxy's path prefix).
function publicURL(path) {
  if (state.config.publicBase) return state.config.publicBase + path;
  return new URL(path.replace(/^\//, ""), document.baseURI).href;
}

function clientServer() {
  return state.config.servers[$("client-server").selectedIndex] || state.config.servers[0];
}

// copyText copies text to the clipboard, and says on the button whether
// it could. Without the clipboard API (a page on plain http off
// loopback), it copies a selection of a hidden text area.
async function copyText(text, button) {
  let ok = false;
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      ok = true;
    }
  } catch (e) {
    ok = false;
  }
  if (!ok) {
    const ta = el("textarea", { class: "offscreen", readOnly: true, value: text });
    document.body.append(ta);
    ta.select();
    try {
      ok = document.execCommand("copy");
    } catch (e) {
      ok = false;
    }
    ta.remove();
  }
  const label = button.textContent;
  button.textContent = ok ? "Copied" : "Copy failed: select and copy";
  setTimeout(() => (button.textContent = label), 1500);
}

function copyButton(text, what) {
  return el("button", { type: "button", class: "copy", "aria-label": "Copy " + what, onclick: (e) => copyText(text, e.currentTarget) }, "Copy");
}

// renderClients fills the "Connect a client" panel for the chosen
// server: its endpoints as full URLs, and the client configurations,
// which the bridge renders for the URL (GET ui/clients.json) so that the
// page and the README show the same text.
async function renderClients() {
  const s = clientServer();
  if (!s) {
    $("endpoints").replaceChildren();
    $("clients-error").textContent = "no server is configured";
    return;
  }
  const mcp = s.url || publicURL(s.path);
  const endpoints = [{ name: "MCP endpoint (Streamable HTTP)", url: mcp }, ...(s.endpoints || []).map((e) => ({ name: e.name, url: publicURL(e.path) }))];
  $("endpoints").replaceChildren(
    ...endpoints.map((e) =>
      el("li", {}, el("span", { class: "name" }, e.name), el("span", { class: "url-row" }, el("code", { class: "url" }, e.url), copyButton(e.url, e.name + " URL"))),
    ),
  );
  $("token-hint").hidden = !s.auth;
  $("clients-error").textContent = "";
  try {
    const r = await fetch("ui/clients.json?" + new URLSearchParams({ server: s.name, url: mcp }), { cache: "no-store" });
    if (!r.ok) throw new Error("HTTP " + r.status + ": " + (await r.text()).trim());
    const snippets = await r.json();
    if (clientServer() !== s) return; // another server was chosen since
    state.snippets = snippets;
    $("client-tabs").replaceChildren(
      ...snippets.map((sn, i) =>
        el("button", { type: "button", role: "tab", id: "client-tab-" + sn.id, "aria-controls": "client-pane", "aria-selected": "false", dataset: { snippet: sn.id }, onclick: () => showSnippet(i) }, sn.title),
      ),
    );
    showSnippet(Math.max(0, snippets.findIndex((sn) => sn.id === state.snippetID)));
  } catch (e) {
    $("clients-error").textContent = "cannot load the client configurations: " + e.message;
  }
}

function showSnippet(i) {
  const sn = state.snippets[i];
  if (!sn) return;
  state.snippetID = sn.id;
  for (const b of $("client-tabs").children) b.setAttribute("aria-selected", String(b.dataset.snippet === sn.id));
  $("client-pane").setAttribute("aria-labelledby", "client-tab-" + sn.id);
  $("client-where").textContent = sn.where;
  $("client-text").textContent = sn.text;
  $("client-text").dataset.snippet = sn.id;
  $("client-note").textContent = sn.note;
  $("client-pane").hidden = false;
}

// ---- servers (the registry API, for its admins) -------------------------------
//
// With --config, an --admin or --registry-admin sees the servers of the
// file and, with registry:write, adds, edits, disables and removes them.
// The panel is built only once the bridge answered the page's principal
// with the list: for anyone else nothing of it exists on the page. Env
// values are write-only: the API never sends them, and the form sends a
// value only when one is typed.

const registry = {
  servers: [], // the API's list
  writable: false, // the page's principal may change them (registry:write)
  editing: null, // the server whose form is shown; "" for a new one
  removing: null, // the server whose Remove awaits its confirmation
  names: "", // the served names the last snapshot had, to follow reloads
  loading: null,
};

// loadRegistry asks the API for the list; a refusal (or a bridge without
// it) removes the panel.
async function loadRegistry() {
  if (!state.config.registry) return;
  if (registry.loading) return registry.loading;
  registry.loading = (async () => {
    try {
      const r = await fetch("admin/servers", { headers: withAuth(), cache: "no-store" });
      if (!r.ok) {
        dropRegistry();
        return;
      }
      const list = await r.json();
      registry.servers = list.servers || [];
      registry.writable = !!list.writable;
      renderRegistry();
    } catch (e) {
      dropRegistry();
    } finally {
      registry.loading = null;
    }
  })();
  return registry.loading;
}

function dropRegistry() {
  registry.servers = [];
  registry.editing = registry.removing = null;
  const p = $("registry");
  if (p) p.remove();
}

// registryPanel is the panel, built the first time an admin's list comes.
function registryPanel() {
  let p = $("registry");
  if (p) return p;
  p = el(
    "section",
    { id: "registry", class: "panel", "aria-labelledby": "registry-title" },
    el("h2", { id: "registry-title" }, "Servers ", el("span", { id: "registry-count", class: "count" })),
    el("div", { class: "scroll" }, el("table", { id: "registry-table" },
      el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "State"), el("th", {}, "Mode"), el("th", {}, "Command"), el("th", {}, ""))),
      el("tbody"))),
    el("div", { class: "row", id: "registry-add-row" }, el("button", { id: "registry-add", type: "button", onclick: () => editServer("") }, "Add a server")),
    el("form", { id: "registry-form", hidden: true, onsubmit: (e) => { e.preventDefault(); saveServer(); } }),
    el("p", { id: "registry-error", class: "error", role: "alert" }),
    el("p", { id: "registry-status", class: "hint", role: "status" }),
  );
  $("clients").after(p);
  return p;
}

function renderRegistry() {
  registryPanel();
  // A reader (--admin) sees the servers; changes are offered to those
  // who may make them.
  $("registry-add-row").hidden = !registry.writable;
  const rows = registry.servers.map((s) => {
    const e = s.entry || {};
    const actions = el("td", { class: "actions", hidden: !registry.writable });
    const act = (label, fn, cls) => el("button", { type: "button", class: "small " + (cls || "secondary"), dataset: { action: label.toLowerCase() }, onclick: fn }, label);
    actions.append(act("Edit", () => editServer(s.name)));
    actions.append(s.enabled ? act("Disable", () => serverAction(s.name, "disable")) : act("Enable", () => serverAction(s.name, "enable")));
    actions.append(registry.removing === s.name ? act("Confirm remove", () => removeServer(s.name), "danger") : act("Remove", () => { registry.removing = s.name; renderRegistry(); }));
    const health = s.health || {};
    return el(
      "tr",
      { dataset: { server: s.name } },
      el("td", { class: "mono" }, s.name),
      el("td", { class: health.status === "ready" ? "ok" : health.status === "disabled" ? "hint" : "warn", title: health.message || "" }, health.status || ""),
      el("td", { class: "mode" }, s.mode || ""),
      el("td", {}, commandLine([e.command, ...(e.args || [])]), (s.envKeys || []).length ? el("span", { class: "hint" }, " · env: " + s.envKeys.join(", ")) : null),
      actions,
    );
  });
  $("registry-table").tBodies[0].replaceChildren(...rows);
  $("registry-count").textContent = "(" + rows.length + ")";
}

// editServer shows the form for server name, or for a new server ("").
function editServer(name) {
  registry.editing = name;
  registry.removing = null;
  const s = registry.servers.find((x) => x.name === name);
  const e = (s && s.entry) || {};
  const form = $("registry-form");
  const field = (id, label, input) => el("div", { class: "field" }, el("label", { for: id }, label), input);
  const envRows = el("div", { id: "reg-env" });
  const envRow = (key) =>
    el(
      "div",
      { class: "row nowrap env-row", dataset: { key: key || "" } },
      el("input", { class: "env-name", value: key || "", readOnly: !!key, placeholder: "NAME", "aria-label": "variable name", spellcheck: false }),
      // Write-only: a value is never shown, only replaced.
      el("input", { class: "env-value", type: "password", autocomplete: "off", placeholder: key ? "unchanged (write-only)" : "value", "aria-label": "value of " + (key || "the variable") }),
      key ? el("label", { class: "hint" }, el("input", { type: "checkbox", class: "env-remove" }), " remove") : null,
    );
  for (const k of (s && s.envKeys) || []) envRows.append(envRow(k));
  form.replaceChildren(
    el("h3", {}, name ? "Edit " + name : "Add a server"),
    field("reg-name", "Name", el("input", { id: "reg-name", value: name, readOnly: !!name, required: true, pattern: "[A-Za-z0-9_-]{1,64}", spellcheck: false })),
    field("reg-command", "Command", el("input", { id: "reg-command", value: e.command || "", required: true, spellcheck: false })),
    field("reg-args", "Arguments, one per line", el("textarea", { id: "reg-args", rows: 3, value: (e.args || []).join("\n"), spellcheck: false })),
    field("reg-cwd", "Working directory", el("input", { id: "reg-cwd", value: e.cwd || "", spellcheck: false })),
    field("reg-mode", "Mode", el("select", { id: "reg-mode" }, ...["", "per-session", "shared", "per-identity"].map((m) => el("option", { value: m, selected: (e.mode || "") === m }, m || "the bridge's default")))),
    el("h3", {}, "Environment"),
    el("p", { class: "hint" }, "Values are write-only: the bridge never shows them. Leave a value empty to keep it."),
    envRows,
    el("button", { id: "reg-add-env", type: "button", class: "small secondary", onclick: () => envRows.append(envRow("")) }, "Add a variable"),
    el("div", { class: "row nowrap" }, el("button", { id: "reg-save", type: "submit" }, name ? "Save" : "Add"), el("button", { type: "button", class: "secondary", onclick: () => { registry.editing = null; form.hidden = true; } }, "Cancel")),
  );
  form.hidden = false;
  $("registry-error").textContent = "";
  $("reg-command").focus();
}

// formEnv reads the form's environment: values typed (set), and keys to
// remove.
function formEnv() {
  const set = {};
  const remove = [];
  for (const row of document.querySelectorAll("#reg-env .env-row")) {
    const key = row.dataset.key || row.querySelector(".env-name").value.trim();
    const value = row.querySelector(".env-value").value;
    const rm = row.querySelector(".env-remove");
    if (rm && rm.checked) remove.push(key);
    else if (key && value !== "") set[key] = value;
  }
  return { set, remove };
}

// saveServer sends the form: a new server whole (POST), an edited one as
// a merge patch of what changed, with its ETag (PATCH, If-Match).
async function saveServer() {
  const name = registry.editing;
  const s = registry.servers.find((x) => x.name === name);
  const e = (s && s.entry) || {};
  const args = $("reg-args").value.split("\n").map((a) => a.trim()).filter((a) => a !== "");
  const env = formEnv();
  const body = {};
  let method = "PATCH";
  let url = "admin/servers/" + encodeURIComponent(name);
  const headers = withAuth({ "Content-Type": "application/json" });
  const changed = (k, v, was) => {
    if (JSON.stringify(v) !== JSON.stringify(was)) body[k] = v;
  };
  if (!s) {
    method = "POST";
    url = "admin/servers";
    Object.assign(body, { name: $("reg-name").value.trim(), command: $("reg-command").value.trim(), args });
    if ($("reg-cwd").value.trim()) body.cwd = $("reg-cwd").value.trim();
    if ($("reg-mode").value) body.mode = $("reg-mode").value;
    if (Object.keys(env.set).length) body.env = env.set;
  } else {
    headers["Content-Type"] = "application/merge-patch+json";
    headers["If-Match"] = s.etag;
    changed("command", $("reg-command").value.trim(), e.command || "");
    changed("args", args, e.args || []);
    changed("cwd", $("reg-cwd").value.trim() || null, e.cwd || null);
    changed("mode", $("reg-mode").value || null, e.mode || null);
    if (Object.keys(env.set).length) body.env = env.set;
    if (env.remove.length) body.env_remove = env.remove;
  }
  await registryCall(method, url, headers, JSON.stringify(body), (s ? "saved " : "added ") + (body.name || name));
}

async function serverAction(name, action) {
  registry.removing = null;
  await registryCall("POST", "admin/servers/" + encodeURIComponent(name) + ":" + action, withAuth(), undefined, action + "d " + name);
}

async function removeServer(name) {
  registry.removing = null;
  await registryCall("DELETE", "admin/servers/" + encodeURIComponent(name), withAuth(), undefined, "removed " + name);
}

// registryCall makes one change and shows its outcome in the bridge's
// words: its message, and each problem by server and field.
async function registryCall(method, url, headers, body, done) {
  $("registry-error").textContent = "";
  $("registry-status").textContent = "…";
  for (const b of document.querySelectorAll("#registry button")) b.disabled = true;
  try {
    const r = await fetch(url, { method, headers, body, cache: "no-store" });
    const text = await r.text();
    let answer = {};
    try {
      answer = JSON.parse(text);
    } catch {
      // not JSON: said as text below
    }
    if (!r.ok) {
      const err = answer.error || {};
      const problems = (err.problems || []).map((p) => (p.field ? p.field + ": " : "") + p.message);
      $("registry-error").textContent = [err.message || "HTTP " + r.status, ...problems].join("\n");
      $("registry-status").textContent = "";
      return;
    }
    registry.editing = null;
    $("registry-form").hidden = true;
    $("registry-status").textContent = done;
    await refreshServers();
  } catch (e) {
    $("registry-error").textContent = "the bridge did not answer: " + e.message;
    $("registry-status").textContent = "";
  } finally {
    for (const b of document.querySelectorAll("#registry button")) b.disabled = false;
  }
}

// refreshServers rereads the list and the page's configuration, whose
// servers the console and the client configurations offer.
async function refreshServers() {
  await loadRegistry();
  try {
    const r = await fetch("ui/config.json", { cache: "no-store" });
    if (r.ok) {
      state.config = await r.json();
      fillServerLists();
    }
  } catch {
    // the lists stay as they were
  }
}

// followRegistry rereads the list when the servers served change (a
// reload, another admin's change).
function followRegistry(snap) {
  if (!$("registry")) return;
  const names = (snap.servers || []).map((s) => s.name).join(",");
  if (names !== registry.names) {
    registry.names = names;
    refreshServers();
  }
}

// ---- approvals (the operators' channel, for approvers and admins) -------------
//
// Calls that need a human's yes wait here. The feed carries the queue to
// approvers and admins only (for anyone else the snapshot has none, and
// nothing of the panel exists); approvers decide with the bridge's
// /approvals API. A card is kept while its approval lives, so a reason
// being typed survives the snapshots that come meanwhile.

// renderApprovals shows the queue q ({alive, approver}), or removes the
// panel when the snapshot has none.
function renderApprovals(q) {
  let p = $("approvals");
  if (!q) {
    if (p) p.remove();
    return;
  }
  if (!p) {
    p = el(
      "section",
      { id: "approvals", class: "panel", "aria-labelledby": "approvals-title" },
      el("h2", { id: "approvals-title" }, "Approvals ", el("span", { id: "approvals-count", class: "count" })),
      el("p", { class: "hint" }, "Calls held until a human says yes. Arguments are shown as the bridge masks them; an approval runs this call once, with exactly these arguments."),
      el("div", { id: "approvals-list" }),
      el("p", { id: "approvals-empty", class: "hint" }, "No call waits for approval."),
      el("p", { id: "approvals-error", class: "error", role: "alert" }),
      el("p", { id: "approvals-status", class: "hint", role: "status" }),
    );
    $("clients").before(p);
  }
  const list = $("approvals-list");
  const alive = q.alive || [];
  const ids = new Set(alive.map((a) => a.id));
  for (const card of [...list.children]) {
    if (!ids.has(card.dataset.approval)) card.remove();
  }
  for (const a of alive) {
    let card = list.querySelector(`[data-approval="${CSS.escape(a.id)}"]`);
    if (!card) {
      card = approvalCard(a, q.approver);
      list.append(card);
    }
    const state = card.querySelector(".state");
    state.textContent = a.state === "approved" ? "approved, not run yet" : a.waiting > 0 ? "waiting" : "waiting for a retry";
    state.className = "state badge " + (a.state === "approved" ? "ok" : "warn");
  }
  $("approvals-count").textContent = "(" + alive.length + ")";
  $("approvals-empty").hidden = alive.length > 0;
}

// approvalCard is one held call: what would run, and, for an approver
// who may decide it, a reason and the two buttons.
function approvalCard(a, approver) {
  const where = a.server ? " on " + a.server : "";
  const card = el(
    "article",
    { class: "approval", dataset: { approval: a.id } },
    el("div", { class: "approval-head" },
      el("span", { class: "mono tool-name" }, a.tool),
      el("span", { class: "hint" }, where + " · by " + a.principal + " · asked ", ago(a.requested), " · denied in ", until(a.expires)),
      el("span", { class: "state badge" })),
    el("div", { class: "hint" }, "rule ", el("code", {}, a.rule), a.askedCaller ? " · the caller's user was asked too" : ""),
    el("pre", { class: "arguments" }, a.arguments),
  );
  if (a.canDecide) {
    const reason = el("input", { class: "reason", placeholder: "reason (optional)", "aria-label": "reason for " + a.tool, maxLength: 500, spellcheck: false });
    card.append(
      el("div", { class: "row nowrap decide" },
        reason,
        el("button", { type: "button", dataset: { action: "approve" }, onclick: () => decide(a, "approve", reason.value) }, "Approve"),
        el("button", { type: "button", class: "danger", dataset: { action: "deny" }, onclick: () => decide(a, "deny", reason.value) }, "Deny")),
    );
  } else if (approver) {
    card.append(el("p", { class: "hint" }, "You made this call: another approver decides (--approval-separate-approver)."));
  }
  return card;
}

// decide sends an approver's decision, and says how it went in the
// bridge's words.
async function decide(a, decision, reason) {
  const card = document.querySelector(`#approvals [data-approval="${CSS.escape(a.id)}"]`);
  const buttons = card ? card.querySelectorAll("button") : [];
  for (const b of buttons) b.disabled = true;
  $("approvals-error").textContent = "";
  try {
    const r = await fetch("approvals/" + encodeURIComponent(a.id), {
      method: "POST",
      headers: withAuth({ "Content-Type": "application/json" }),
      body: JSON.stringify({ decision, reason }),
      cache: "no-store",
    });
    if (!r.ok) {
      $("approvals-error").textContent = (await reasonOf(r)) || "HTTP " + r.status;
      for (const b of buttons) b.disabled = false;
      return;
    }
    $("approvals-status").textContent = (decision === "approve" ? "approved " : "denied ") + a.tool + (a.server ? " on " + a.server : "") + " for " + a.principal;
    if (card) card.remove();
    $("approvals-empty").hidden = $("approvals-list").children.length > 0;
  } catch (e) {
    $("approvals-error").textContent = "the bridge did not answer: " + e.message;
    for (const b of buttons) b.disabled = false;
  }
}

// ---- start -------------------------------------------------------------------

// fillServerLists offers the servers of the page's configuration in the
// console and the client configurations, keeping the choice made.
function fillServerLists() {
  const options = () => state.config.servers.map((s) => el("option", { value: s.name }, s.name + " (" + s.path + ")"));
  for (const id of ["server-select", "client-server"]) {
    const was = $(id).value;
    $(id).replaceChildren(...options());
    if (state.config.servers.some((s) => s.name === was)) $(id).value = was;
  }
  $("client-server-row").hidden = state.config.servers.length < 2;
  renderClients();
}

async function main() {
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const t = $("token").value.trim();
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    $("token").value = "";
    start();
  });
  $("forget-token").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    askToken("");
  });
  $("connect-form").addEventListener("submit", (e) => {
    e.preventDefault();
    connect();
  });
  $("disconnect").addEventListener("click", () => disconnect());
  for (const kind of ["tools", "prompts", "resources"]) $("tab-" + kind).addEventListener("click", () => showTab(kind));
  $("tool-form").addEventListener("submit", (e) => {
    e.preventDefault();
    callTool();
  });
  $("cancel").addEventListener("click", () => cancelCall());
  $("prompt-form").addEventListener("submit", (e) => {
    e.preventDefault();
    getPrompt();
  });
  $("template-form").addEventListener("submit", (e) => {
    e.preventDefault();
    readTemplate();
  });
  $("subscribe").addEventListener("click", () => toggleSubscription());
  $("clear-notifications").addEventListener("click", () => $("notifications").replaceChildren());
  // Tabs: the arrow keys move between the tabs of a list, as ARIA's tab
  // pattern has it.
  for (const list of document.querySelectorAll('[role="tablist"]')) {
    list.addEventListener("keydown", (e) => {
      if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
      const tabs = [...list.querySelectorAll('[role="tab"]:not(:disabled)')];
      const i = tabs.indexOf(document.activeElement);
      if (i < 0) return;
      const next = tabs[(i + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
      next.focus();
      next.click();
      e.preventDefault();
    });
  }
  $("client-server").addEventListener("change", () => renderClients());
  $("copy-snippet").addEventListener("click", (e) => copyText($("client-text").textContent, e.currentTarget));
  // End the console's session when the page goes away; keepalive lets the
  // DELETE outlive the page.
  window.addEventListener("pagehide", () => {
    const c = state.client;
    if (c && c.sid) fetch(c.url, { method: "DELETE", headers: c.headers(), keepalive: true }).catch(() => {});
  });
  setInterval(tick, 1000);

  try {
    const r = await fetch("ui/config.json", { cache: "no-store" });
    state.config = await r.json();
  } catch (e) {
    setFeedStatus("cannot load the page's configuration: " + e.message, "error");
    return;
  }
  fillServerLists();
  // A live view no token can open is said at once, not asked a token for.
  if (state.config.auth && !token() && !state.config.feedRefused) askToken("");
  else start();
}

main();
