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
  progressToken: null, // of the call under way
  calls: 0,
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

// AuthError is a 401 or 403: the page asks for a token.
class AuthError extends Error {}

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

function askToken(message) {
  stopFeed();
  disconnect();
  $("app").hidden = true;
  $("forget-token").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  setFeedStatus("signed out", "");
  $("token").focus();
}

// refused forgets a token the bridge turned down and asks for another.
function refused(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  askToken(message);
}

function start() {
  $("login").hidden = true;
  $("app").hidden = false;
  $("forget-token").hidden = !token();
  watchFeed();
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
        refused(token() ? "The bridge refused this token." : "This bridge needs a token.");
        return;
      }
      if (r.status === 403) {
        refused("This token may not use the bridge.");
        return;
      }
      if (!r.ok) throw new Error("HTTP " + r.status);
      const date = Date.parse(r.headers.get("Date") || "");
      if (!Number.isNaN(date)) state.skew = date - Date.now();
      setFeedStatus("live", "ok");
      delay = 1000;
      await readSSE(r.body, (ev) => {
        if (ev.event !== "snapshot") return;
        state.snapshot = JSON.parse(ev.data);
        renderSnapshot();
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
}

function renderSnapshot() {
  const snap = state.snapshot;
  const server = $("server");
  server.replaceChildren();
  fact(server, "Command", snap.command);
  fact(server, "Mode", snap.mode);
  fact(server, "Endpoints", state.config.servers.map((s) => s.path).join(", "));
  fact(server, "Waiting children", String(snap.waitingChildren ?? 0));

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
    ),
  );
  $("sessions").tBodies[0].replaceChildren(...rows);
  $("session-count").textContent = "(" + rows.length + ")";
  $("no-sessions").hidden = rows.length > 0;

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

// ---- console: an MCP client over Streamable HTTP ---------------------------

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
  // JSON body, or an SSE stream read as it arrives) to onMessage.
  async post(msg, onMessage) {
    const r = await fetch(this.url, {
      method: "POST",
      headers: this.headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(msg),
    });
    if (r.status === 401 || r.status === 403) throw new AuthError("HTTP " + r.status);
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
  // server requests that come first go to the console.
  async request(method, params) {
    const id = this.nextId++;
    let response = null;
    await this.post({ jsonrpc: "2.0", id, method, params }, (m) => {
      if (m.id === id && ("result" in m || "error" in m)) response = m;
      else this.dispatch(m);
    });
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
      if (p.progressToken === state.progressToken) {
        const bar = $("progress");
        if (p.total !== undefined) {
          bar.max = p.total;
          bar.value = p.progress;
        } else {
          bar.removeAttribute("value"); // indeterminate
        }
        $("progress-text").textContent = text;
      }
      break;
    }
    case "notifications/message":
      note("log " + (p.level || ""), (p.logger ? p.logger + ": " : "") + (typeof p.data === "string" ? p.data : JSON.stringify(p.data)), m.method);
      break;
    default:
      note(m.id !== undefined ? "request" : "notification", Object.keys(p).length ? JSON.stringify(p) : "", m.method);
  }
}

function serverURL() {
  const s = state.config.servers[$("server-select").selectedIndex] || state.config.servers[0];
  // Relative to the page, so a proxy that serves the bridge under a
  // prefix keeps working.
  return new URL(s.path.replace(/^\//, ""), document.baseURI).toString();
}

function setConsoleStatus(text, kind) {
  const s = $("console-status");
  s.textContent = text;
  s.className = kind || "hint";
}

async function connect() {
  await disconnect();
  const server = state.config.servers[$("server-select").selectedIndex] || state.config.servers[0];
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
    await listTools();
  } catch (e) {
    await client.close();
    state.client = null;
    $("connect").disabled = false;
    if (e instanceof AuthError) {
      refused("The bridge refused this token.");
      return;
    }
    setConsoleStatus("cannot connect: " + e.message, "error");
  }
}

async function disconnect() {
  const client = state.client;
  state.client = null;
  state.tool = null;
  $("tools-box").hidden = true;
  $("tool-form").hidden = true;
  $("connect").disabled = false;
  $("disconnect").disabled = true;
  if (client) {
    await client.close();
    setConsoleStatus("disconnected", "hint");
  }
}

async function listTools() {
  const tools = [];
  let cursor;
  do {
    const res = await state.client.request("tools/list", cursor ? { cursor } : {});
    tools.push(...(res.tools || []));
    cursor = res.nextCursor;
  } while (cursor);
  const list = $("tool-list");
  list.replaceChildren(
    ...tools.map((t) =>
      el(
        "li",
        {},
        el("button", { type: "button", class: "tool", title: t.description || "", dataset: { tool: t.name }, onclick: () => showTool(t) }, t.name),
      ),
    ),
  );
  $("tool-count").textContent = "(" + tools.length + ")";
  $("tools-box").hidden = false;
}

// schemaType is a property's type, ignoring "null" in a type list.
function schemaType(p) {
  if (Array.isArray(p.type)) return p.type.find((t) => t !== "null");
  if (!p.type && Array.isArray(p.enum)) return "string";
  return p.type;
}

// showTool renders a form from the tool's input schema: strings, numbers,
// integers and booleans get inputs of their own, anything else a JSON
// text area; required properties are marked and enforced.
function showTool(tool) {
  state.tool = tool;
  for (const b of document.querySelectorAll("#tool-list button")) b.classList.toggle("selected", b.dataset.tool === tool.name);
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
    return el(
      "div",
      { class: "field" },
      el("label", { htmlFor: input.id }, name, required.has(name) ? el("span", { class: "required", title: "required" }, " *") : null, el("span", { class: "type" }, " " + type)),
      input,
      p.description ? el("small", { class: "hint" }, p.description) : null,
    );
  });
  $("tool-fields").replaceChildren(...(fields.length ? fields : [el("p", { class: "hint" }, "No arguments.")]));
  $("progress-box").hidden = true;
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
  // arrive on this call's own SSE response before its result.
  const progressToken = "console-" + ++state.calls;
  state.progressToken = progressToken;
  $("progress").removeAttribute("value");
  $("progress-text").textContent = "";
  $("progress-box").hidden = false;
  $("call").disabled = true;
  box.className = "";
  box.replaceChildren(el("p", { class: "hint" }, "calling " + tool.name + "…"));
  try {
    const res = await state.client.request("tools/call", { name: tool.name, arguments: args, _meta: { progressToken } });
    renderResult(tool.name, res);
  } catch (e) {
    if (e instanceof AuthError) {
      refused("The bridge refused this token.");
      return;
    }
    box.className = "error";
    box.replaceChildren(el("p", { class: "error" }, tool.name + " failed: " + e.message));
  } finally {
    $("call").disabled = false;
    if (state.progressToken === progressToken) state.progressToken = null;
  }
}

function renderResult(name, res) {
  const box = $("result");
  box.className = res.isError ? "error" : "ok";
  const parts = [el("p", { class: "hint" }, name + (res.isError ? " returned an error" : " returned"))];
  for (const c of res.content || []) {
    switch (c.type) {
      case "text":
        parts.push(el("pre", { class: "content text" }, c.text));
        break;
      case "image":
        parts.push(el("img", { class: "content", alt: "image " + c.mimeType, src: "data:" + c.mimeType + ";base64," + c.data }));
        break;
      case "audio":
        parts.push(el("audio", { class: "content", controls: true, src: "data:" + c.mimeType + ";base64," + c.data }));
        break;
      case "resource": {
        const r = c.resource || {};
        parts.push(el("pre", { class: "content resource" }, r.uri + (r.mimeType ? " (" + r.mimeType + ")" : "") + "\n" + (r.text ?? "[" + (r.blob || "").length + " bytes of base64]")));
        break;
      }
      case "resource_link":
        parts.push(el("pre", { class: "content resource" }, "link: " + c.uri + (c.name ? " (" + c.name + ")" : "")));
        break;
      default:
        parts.push(el("pre", { class: "content" }, JSON.stringify(c, null, 2)));
    }
  }
  if (res.structuredContent !== undefined) {
    parts.push(el("p", { class: "hint" }, "structured content"), el("pre", { class: "content structured" }, JSON.stringify(res.structuredContent, null, 2)));
  }
  box.replaceChildren(...parts);
}

// ---- start -------------------------------------------------------------------

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
  $("tool-form").addEventListener("submit", (e) => {
    e.preventDefault();
    callTool();
  });
  $("clear-notifications").addEventListener("click", () => $("notifications").replaceChildren());
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
  $("server-select").replaceChildren(...state.config.servers.map((s) => el("option", {}, s.name + " (" + s.path + ")")));
  if (state.config.auth && !token()) askToken("");
  else start();
}

main();
