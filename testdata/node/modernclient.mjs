// modernclient drives an MCP server over Streamable HTTP with the official
// TypeScript SDK v2 client (@modelcontextprotocol/client) pinned to the
// stateless 2026-07-28 revision, so mcp-bridge's tests can check the bridge's
// translation for a legacy server (server-everything) against a client they
// did not write.
//
// Usage: node modernclient.mjs <url>
//
// It connects with versionNegotiation {mode: {pin: "2026-07-28"}} (the
// connect is a server/discover: no initialize, no session), as a client
// that declares sampling, elicitation and roots, then:
//
//   - lists tools, prompts, resources and resource templates, reads a resource;
//   - calls echo and get-sum;
//   - calls trigger-long-running-operation with an onprogress callback;
//   - calls trigger-sampling-request, trigger-elicitation-request and
//     get-roots-list: the server's questions come back as input_required
//     results, which the SDK fulfils through the handlers below and retries
//     with inputResponses and requestState (MRTR), inside the one callTool;
//     then trigger-sampling-request from the plain client (below), which
//     must fail with -32021 (missing client capability);
//   - opens subscriptions/listen for a resource URI, has the server send
//     updates (toggle-subscriber-updates), and waits for one;
//   - starts a long-running call, aborts its signal once its first progress
//     arrived (the SDK closes the request's stream: 2026-07-28 cancellation),
//     then checks that a later call still works; once with each client.
//
// A second, plain client declares no capability a server may ask a client
// to use. The bridge serves its calls on the pool's base child, the one
// that holds the listens' subscriptions, where the server's per-process
// updates can find them: toggle-subscriber-updates goes through it. (The
// first client's calls run on a child leased to each call, which holds no
// subscription.) Its cancelled call is the base child's, the first
// client's a leased child's.
//
// It prints one JSON line to stdout:
//
//   {protocolVersion, era, serverName, supportedVersions, capabilities,
//    sessionIds: [every Mcp-Session-Id a response carried],
//    tools, prompts, resources, templates: [names], read: text,
//    echo, sum, progress: [the server's values], longRunning,
//    sampleAsked, sample, elicitAsked, elicit, rootsAsked: n, roots,
//    missing: {code, requiredCapabilities},  // the plain client's sampling call
//    retries: {tool: n},  // POSTs that carried a requestState (MRTR retries)
//    wire: {method: {results, resultTypes, cacheHints, cacheScopes, serverInfo}},
//                         // what the results on the wire said of themselves
//    listen: {honored, updates: [{uri, subscriptionId}], closed},
//    cancel, cancelPlain: {progress, error, after},
//    posts: n, errors: [strings]}
//
// It exits 0 if errors is empty, 1 otherwise (with the errors on stderr).
// Every wait is bounded: the whole run by MODERNCLIENT_TIMEOUT_MS (default
// 30000), each wait inside it by the same deadline.
//
// Environment:
//
//   MODERNCLIENT_TOKEN       a bearer token sent on every request (the bridge's
//                            --token-env), none by default
//   MODERNCLIENT_TIMEOUT_MS  the deadline of the whole run
//
// Works on Node 20 (the machine `node`).

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url] = process.argv.slice(2);
if (!url) {
  console.error("usage: node modernclient.mjs <url>");
  process.exit(2);
}

const totalMs = Number(process.env.MODERNCLIENT_TIMEOUT_MS || 30000);
const token = process.env.MODERNCLIENT_TOKEN || "";
const version = "2026-07-28";
const started = Date.now();
const left = () => Math.max(1, totalMs - (Date.now() - started));

// What the handlers answer, fixed so the test can find them in the results.
const sampledText = "sampled by modernclient";
const elicitName = "Ada Lovelace";
const root = { uri: "file:///modernclient/root", name: "modernclient-root" };
const subscribedURI = "demo://resource/dynamic/text/1";

const out = {
  protocolVersion: "",
  era: "",
  sessionIds: [],
  serverName: "",
  supportedVersions: [],
  capabilities: [],
  tools: [],
  prompts: [],
  resources: [],
  templates: [],
  read: "",
  echo: "",
  sum: "",
  progress: [],
  longRunning: "",
  sampleAsked: "",
  sample: "",
  elicitAsked: "",
  elicit: "",
  rootsAsked: 0,
  roots: "",
  missing: null,
  retries: {},
  wire: {},
  listen: { honored: null, updates: [], closed: "" },
  cancel: { progress: [], error: "", after: "" },
  cancelPlain: { progress: [], error: "", after: "" },
  posts: 0,
  errors: [],
};

// One deadline for the whole run: a hung bridge must fail the test, not stall it.
const deadline = setTimeout(() => {
  console.error(`modernclient: timed out after ${totalMs} ms`);
  console.log(JSON.stringify({ ...out, errors: [...out.errors, "timeout"] }));
  process.exit(1);
}, totalMs);

// observe is the transports' fetch: it records what a test asserts on the
// wire (every Mcp-Session-Id a response carried, which POSTs were MRTR
// retries) and passes everything through unchanged.
async function observe(input, init) {
  if ((init?.method ?? "GET") === "POST") {
    out.posts++;
    try {
      const body = JSON.parse(init.body);
      if (body?.params?.requestState !== undefined) {
        const name = body.params.name ?? body.params.uri ?? body.method;
        out.retries[name] = (out.retries[name] ?? 0) + 1;
      }
    } catch {
      // not JSON: nothing to record
    }
  }
  const res = await fetch(input, init);
  const sid = res.headers.get("mcp-session-id");
  if (sid !== null) out.sessionIds.push(sid);
  if ((init?.method ?? "GET") === "POST" && res.body !== null) {
    let method = "";
    try {
      method = JSON.parse(init.body)?.method ?? "";
    } catch {
      // not JSON
    }
    // Read a copy of the answer beside the SDK; a stream the SDK aborts
    // (a cancelled call, a closed listen) simply ends this read.
    reading.push(
      res
        .clone()
        .text()
        .then((body) => recordWire(method, body))
        .catch(() => {}),
    );
  }
  return res;
}

// reading are the copies of answers being read (observe).
const reading = [];

// recordWire notes, per method, the resultType of every result in an
// answer (a JSON body or SSE data lines) and whether results carried the
// caching hints (ttlMs and cacheScope) and _meta serverInfo.
function recordWire(method, body) {
  const lines = body.trimStart().startsWith("{")
    ? [body]
    : body
        .split("\n")
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5));
  for (const line of lines) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      continue;
    }
    if (msg?.result === undefined) continue;
    const w = (out.wire[method] ??= { results: 0, resultTypes: [], cacheHints: 0, cacheScopes: [], serverInfo: 0 });
    const r = msg.result;
    w.results++;
    if (!w.resultTypes.includes(r.resultType ?? "")) w.resultTypes.push(r.resultType ?? "");
    if (typeof r.ttlMs === "number" && typeof r.cacheScope === "string") {
      w.cacheHints++;
      if (!w.cacheScopes.includes(r.cacheScope)) w.cacheScopes.push(r.cacheScope);
    }
    if (r._meta?.["io.modelcontextprotocol/serverInfo"]?.name) w.serverInfo++;
  }
}

function newClient(name, capabilities) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: observe,
    requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : undefined,
  });
  const client = new Client(
    { name, version: "0.0.1" },
    { capabilities, versionNegotiation: { mode: { pin: version } } },
  );
  client.onerror = (err) => {
    if (!closing) out.errors.push(`${name} onerror: ${err?.message ?? err}`);
  };
  return { client, transport };
}

let closing = false;
const { client, transport } = newClient("mcp-bridge-modernclient", {
  sampling: {},
  elicitation: { form: {} },
  roots: {},
});
// The plain client: no capability a server may ask a client to use.
const plain = newClient("mcp-bridge-modernclient-plain", {});

client.setRequestHandler("sampling/createMessage", async (req) => {
  const last = req.params.messages.at(-1);
  const blocks = Array.isArray(last?.content) ? last.content : [last?.content];
  out.sampleAsked = blocks.find((b) => b?.type === "text")?.text ?? "";
  return {
    role: "assistant",
    content: { type: "text", text: sampledText },
    model: "modernclient-fake-model",
    stopReason: "endTurn",
  };
});
client.setRequestHandler("elicitation/create", async (req) => {
  out.elicitAsked = req.params.message ?? "";
  return { action: "accept", content: { name: elicitName, check: true } };
});
client.setRequestHandler("roots/list", async () => {
  out.rootsAsked++;
  return { roots: [root] };
});

// update is resolved by the first notifications/resources/updated for the
// subscribed URI.
let gotUpdate;
const update = new Promise((resolve) => (gotUpdate = resolve));
client.setNotificationHandler("notifications/resources/updated", (n) => {
  const subscriptionId = n.params?._meta?.["io.modelcontextprotocol/subscriptionId"] ?? null;
  out.listen.updates.push({ uri: n.params?.uri ?? "", subscriptionId });
  if (n.params?.uri === subscribedURI) gotUpdate();
});

function text(result) {
  return (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
}

// step runs one operation, recording rather than throwing, so the JSON line
// still says how far the run got.
async function step(name, fn) {
  try {
    return await fn();
  } catch (err) {
    out.errors.push(`${name}: ${err?.message ?? err}`);
    return undefined;
  }
}

// serverProgress is an onprogress callback that records the server's
// progress values into list, then calls then. The SDK calls onprogress
// itself too, once per input_required round it fulfils ("Fulfilling input
// required by ... (round n)"): those are not the server's, and are left out.
function serverProgress(list, then) {
  return (p) => {
    if (/^Fulfilling input required by /.test(p.message ?? "")) return;
    list.push(p.progress);
    then?.();
  };
}

// within bounds a wait by what is left of the run's deadline.
function within(name, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name}: no answer in time`)), left());
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const opts = () => ({ timeout: left(), maxTotalTimeout: left() });

async function main() {
  await step("connect", () => client.connect(transport, opts()));
  await step("plain connect", () => plain.client.connect(plain.transport, opts()));
  if (out.errors.length > 0) return; // nothing else can work without discovery
  out.protocolVersion = client.getNegotiatedProtocolVersion() ?? "";
  out.era = client.getProtocolEra() ?? "";
  out.serverName = client.getServerVersion()?.name ?? "";
  const discovered = client.getDiscoverResult();
  out.supportedVersions = discovered?.supportedVersions ?? [];
  out.capabilities = Object.keys(discovered?.capabilities ?? {}).sort();

  const tools = await step("tools/list", () => client.listTools(undefined, opts()));
  out.tools = (tools?.tools ?? []).map((t) => t.name);
  const prompts = await step("prompts/list", () => client.listPrompts(undefined, opts()));
  out.prompts = (prompts?.prompts ?? []).map((p) => p.name);
  const resources = await step("resources/list", () => client.listResources(undefined, opts()));
  out.resources = (resources?.resources ?? []).map((r) => r.uri);
  const templates = await step("resources/templates/list", () => client.listResourceTemplates(undefined, opts()));
  out.templates = (templates?.resourceTemplates ?? []).map((r) => r.uriTemplate);
  const read = await step("resources/read", () => client.readResource({ uri: subscribedURI }, opts()));
  out.read = read?.contents?.[0]?.text ?? "";

  out.echo = text(await step("echo", () => client.callTool({ name: "echo", arguments: { message: "hello modern" } }, opts())));
  out.sum = text(await step("get-sum", () => client.callTool({ name: "get-sum", arguments: { a: 19, b: 23 } }, opts())));

  // Passing onprogress makes the SDK put a progressToken in params._meta.
  out.longRunning = text(
    await step("trigger-long-running-operation", () =>
      client.callTool(
        { name: "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } },
        { ...opts(), onprogress: serverProgress(out.progress) },
      ),
    ),
  );

  // MRTR: each of these answers input_required first; the SDK asks the
  // handler and retries within the one callTool.
  out.sample = text(
    await step("trigger-sampling-request", () =>
      client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "what is 6*7?", maxTokens: 10 } }, opts()),
    ),
  );
  out.elicit = text(await step("trigger-elicitation-request", () => client.callTool({ name: "trigger-elicitation-request", arguments: {} }, opts())));
  out.roots = text(await step("get-roots-list", () => client.callTool({ name: "get-roots-list", arguments: {} }, opts())));

  // The sampling tool from the plain client, which cannot answer: the
  // server's question is refused, and the call fails with -32021 naming
  // the capability.
  try {
    await plain.client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "no one asks", maxTokens: 5 } }, opts());
    out.errors.push("plain trigger-sampling-request: succeeded without sampling");
  } catch (err) {
    out.missing = { code: err?.code ?? null, requiredCapabilities: err?.data?.requiredCapabilities ?? null };
  }

  await listen();
  await cancel("cancel", client, out.cancel);
  await cancel("cancel plain", plain.client, out.cancelPlain);
}

// listen opens subscriptions/listen for subscribedURI, has the server send
// updates, and waits for one.
async function listen() {
  const sub = await step("subscriptions/listen", () =>
    client.listen({ resourceSubscriptions: [subscribedURI], toolsListChanged: true }, opts()),
  );
  if (!sub) return;
  out.listen.honored = sub.honoredFilter;
  sub.closed.then((why) => (out.listen.closed = why));
  const toggle = { name: "toggle-subscriber-updates", arguments: {} };
  await step("toggle-subscriber-updates on", () => plain.client.callTool(toggle, opts()));
  await step("resources/updated", () => within("resources/updated", update));
  // Off again: the server would otherwise go on every 5 s.
  await step("toggle-subscriber-updates off", () => plain.client.callTool(toggle, opts()));
  await step("listen close", () => sub.close());
}

// cancel starts a call of c's that would run for 20 s, aborts it once its
// first progress arrived (the child is working on it), then checks that the
// server still answers c, recording into rec. The first client's call runs
// on a leased child, the plain client's on the pool's base child.
async function cancel(name, c, rec) {
  const abort = new AbortController();
  let firstProgress;
  const progressed = new Promise((resolve) => (firstProgress = resolve));
  const call = c.callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 20, steps: 20 } },
    { ...opts(), signal: abort.signal, onprogress: serverProgress(rec.progress, () => firstProgress()) },
  );
  call.catch(() => {}); // awaited below; no unhandled rejection meanwhile
  await step(`${name}: first progress`, () => within(`${name}: first progress`, Promise.race([progressed, call])));
  abort.abort(new Error("modernclient cancels"));
  try {
    await within(`${name}: the aborted call`, call);
    out.errors.push(`${name}: the aborted call resolved`);
  } catch (err) {
    rec.error = String(err?.message ?? err);
  }
  rec.after = text(
    await step(`${name}: echo after cancel`, () => c.callTool({ name: "echo", arguments: { message: "after cancel" } }, opts())),
  );
}

await main();
closing = true;
await step("close", () => client.close());
await step("plain close", () => plain.client.close());
await step("reading answers", () => within("reading answers", Promise.all(reading)));
clearTimeout(deadline);
console.log(JSON.stringify(out));
if (out.errors.length > 0) {
  console.error("modernclient: " + out.errors.join("\n"));
  process.exit(1);
}
process.exit(0);
