// tsclient drives an MCP server over HTTP with the official TypeScript SDK,
// so mcp-bridge's tests can check the bridge against a client they did not write.
//
// Usage: node tsclient.mjs <streamable|sse> <url>
//
//   streamable  StreamableHTTPClientTransport (MCP Streamable HTTP, 2025-03-26 and later)
//   sse         SSEClientTransport (the legacy HTTP+SSE transport of 2024-11-05)
//
// It initializes with capabilities {sampling, elicitation}, lists tools, calls
// echo, then, if the server has them, a progress tool (badchild's `slow`,
// server-everything's `trigger-long-running-operation`) and a sampling tool
// (badchild's `sample`, server-everything's `trigger-sampling-request`). It
// prints one JSON line to stdout:
//
//   {mode, protocolVersion, sessionId, serverName, tools: [names], echo: text,
//    progress: [numbers], sample: text, logs: [data], errors: [strings],
//    warnings: [strings]}
//
// progress may lack the last value: see the typescript-sdk#2580 note below.
//
// then terminates the session (streamable: HTTP DELETE) and closes. It exits
// 0 if errors is empty, 1 otherwise (with the errors on stderr too).
// Everything is bounded by TSCLIENT_TIMEOUT_MS (default 30000).
//
// Environment, for tests that run several clients at once:
//
//   TSCLIENT_MESSAGE  the echo message (default "hello from ts"); give each
//                     client its own to see that every answer is its own
//   TSCLIENT_PREFIX   put before every tool name it calls, e.g. "everything__"
//                     for a server of mcp-bridge's aggregate endpoint
//   TSCLIENT_SKIP     tool names not to call, comma-separated, e.g. "sample":
//                     on a shared child with several sessions' requests in
//                     flight, the bridge refuses a sampling request as
//                     ambiguous, by design
//
// Works on Node 20 (the machine `node`) and on the Node 22 under node_modules.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [mode, url] = process.argv.slice(2);
if (!["streamable", "sse"].includes(mode) || !url) {
  console.error("usage: node tsclient.mjs <streamable|sse> <url>");
  process.exit(2);
}

const totalMs = Number(process.env.TSCLIENT_TIMEOUT_MS || 30000);
const message = process.env.TSCLIENT_MESSAGE || "hello from ts";
const prefix = process.env.TSCLIENT_PREFIX || "";
const skip = new Set((process.env.TSCLIENT_SKIP || "").split(",").filter(Boolean));
// One deadline for the whole run: a hung bridge must fail the test, not stall it.
const deadline = setTimeout(() => {
  console.error(`tsclient: timed out after ${totalMs} ms`);
  console.log(JSON.stringify({ ...out, errors: [...out.errors, "timeout"] }));
  process.exit(1);
}, totalMs);
const requestOpts = { timeout: totalMs, maxTotalTimeout: totalMs };

const out = {
  mode,
  protocolVersion: "",
  sessionId: "",
  serverName: "",
  tools: [],
  echo: "",
  progress: [],
  sample: "",
  logs: [],
  errors: [],
  warnings: [],
};

const transport =
  mode === "streamable"
    ? new StreamableHTTPClientTransport(new URL(url))
    : new SSEClientTransport(new URL(url));

// The Client tells the transport the negotiated version (it becomes the
// MCP-Protocol-Version header); catching it here works for both transports.
const setVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (v) => {
  out.protocolVersion = v;
  setVersion?.(v);
};

const client = new Client(
  { name: "mcp-bridge-tsclient", version: "0.0.1" },
  { capabilities: { sampling: {}, elicitation: {} } },
);

let closing = false;
client.onerror = (err) => {
  const msg = `onerror: ${err?.message ?? err}`;
  // The SDK dispatches responses at once but notifications a microtask later,
  // so a progress notification written just before its response can find its
  // handler gone (typescript-sdk#2580). That is the client's race, not a
  // server's fault: note it, do not fail on it.
  if (msg.includes("progress notification for an unknown token")) out.warnings.push(msg);
  // Stream teardown during close is expected noise; before it, any error counts.
  else if (!closing) out.errors.push(msg);
};

client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  const last = req.params.messages.at(-1);
  const blocks = Array.isArray(last?.content) ? last.content : [last?.content];
  const prompt = blocks.find((b) => b?.type === "text")?.text ?? "";
  return {
    role: "assistant",
    content: { type: "text", text: "sampled:" + prompt },
    model: "tsclient-fake-model",
    stopReason: "endTurn",
  };
});
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "decline" }));
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  out.logs.push(n.params.data);
});

function text(result) {
  return (result?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");
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

async function main() {
  await step("connect", () => client.connect(transport, requestOpts));
  if (out.errors.length > 0) return; // nothing else can work without a session
  out.serverName = client.getServerVersion()?.name ?? "";
  out.sessionId =
    mode === "streamable"
      ? (transport.sessionId ?? "")
      : // The legacy transport keeps the session only in the POST endpoint's query.
        (transport._endpoint?.searchParams.get("sessionId") ?? "");

  const listed = await step("tools/list", () => client.listTools(undefined, requestOpts));
  out.tools = (listed?.tools ?? []).map((t) => t.name);
  const has = (name) => out.tools.includes(prefix + name) && !skip.has(name);
  // Only the arguments a tool's input schema declares: servers may reject
  // the others (the demo server does), and the test servers differ.
  const fit = (name, args) => {
    const props = (listed?.tools ?? []).find((t) => t.name === prefix + name)?.inputSchema?.properties;
    if (!props) return args;
    return Object.fromEntries(Object.entries(args).filter(([k]) => k in props));
  };

  const echo = await step("echo", () =>
    client.callTool({ name: prefix + "echo", arguments: { message } }, undefined, requestOpts),
  );
  out.echo = text(echo);
  if (echo && !out.echo.includes(message)) {
    out.errors.push(`echo: got ${JSON.stringify(out.echo)}`);
  }

  // Passing onprogress makes the SDK put a progressToken in params._meta.
  const progressOpts = { ...requestOpts, onprogress: (p) => out.progress.push(p.progress) };
  const progressCall = has("slow")
    ? { name: prefix + "slow", arguments: fit("slow", { ms: 300, delay_ms: 100, steps: 3 }) }
    : has("trigger-long-running-operation")
      ? { name: prefix + "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } }
      : undefined;
  if (progressCall) {
    await step(progressCall.name, () => client.callTool(progressCall, undefined, progressOpts));
    if (out.progress.length === 0) out.errors.push(`${progressCall.name}: no progress notifications`);
  }

  const sampleName = ["sample", "trigger-sampling-request", "sampleLLM"].find(has);
  if (sampleName) {
    const r = await step(sampleName, () =>
      client.callTool({ name: prefix + sampleName, arguments: fit(sampleName, { prompt: "hi", maxTokens: 10 }) }, undefined, requestOpts),
    );
    out.sample = text(r);
    if (r && !out.sample.includes("sampled:")) {
      out.errors.push(`${sampleName}: sampling handler's text missing from ${JSON.stringify(out.sample)}`);
    }
  }

  closing = true;
  if (mode === "streamable") {
    await step("terminateSession", () => transport.terminateSession());
  }
  await step("close", () => client.close());
}

await main();
clearTimeout(deadline);
console.log(JSON.stringify(out));
if (out.errors.length > 0) {
  console.error("tsclient: " + out.errors.join("\n"));
  process.exit(1);
}
process.exit(0);
