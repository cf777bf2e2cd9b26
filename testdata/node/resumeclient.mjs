// resumeclient makes one long tool call with the official TypeScript SDK's
// StreamableHTTPClientTransport, as shipped (default reconnection options),
// so mcp-bridge's tests can see the SDK resume SSE streams that break under
// it: the test puts a proxy that cuts connections between this client and
// the bridge.
//
// Usage: node resumeclient.mjs <url>
//
// It initializes (2025-11-25, the SDK's latest, so the bridge sends priming
// events), calls badchild's `slow` tool with {ms, steps} and a progress
// callback, waits until it has one log message per step (some come on the
// standalone GET stream, after the result), ends the session with DELETE,
// and prints one JSON line to stdout:
//
//   {protocolVersion, sessionId, result: text, progress: [numbers],
//    logs: [data], disconnects: n, errors: [strings], warnings: [strings]}
//
// disconnects counts the SDK's "SSE stream disconnected" reports: cuts it
// saw as an error. (A cut it sees as the stream's end is not reported; it
// reconnects with Last-Event-ID either way.) It exits
// 0 if errors is empty, 1 otherwise. Everything is bounded by
// RESUME_TIMEOUT_MS (default 60000).
//
// Environment: RESUME_STEPS (default 40), RESUME_MS (default 2000).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url] = process.argv.slice(2);
if (!url) {
  console.error("usage: node resumeclient.mjs <url>");
  process.exit(2);
}
const steps = Number(process.env.RESUME_STEPS || 40);
const ms = Number(process.env.RESUME_MS || 2000);
const totalMs = Number(process.env.RESUME_TIMEOUT_MS || 60000);

const out = {
  protocolVersion: "",
  sessionId: "",
  result: "",
  progress: [],
  logs: [],
  disconnects: 0,
  errors: [],
  warnings: [],
};

// One deadline for the whole run: a call that never resumes must fail the
// test, not stall it.
const deadline = setTimeout(() => {
  out.errors.push(`timed out after ${totalMs} ms`);
  finish();
}, totalMs);

function finish() {
  clearTimeout(deadline);
  console.log(JSON.stringify(out));
  if (out.errors.length > 0) console.error(out.errors.join("\n"));
  process.exit(out.errors.length > 0 ? 1 : 0);
}

const transport = new StreamableHTTPClientTransport(new URL(url));
const setVersion = transport.setProtocolVersion.bind(transport);
transport.setProtocolVersion = (v) => {
  out.protocolVersion = v;
  setVersion(v);
};

const client = new Client({ name: "mcp-bridge-resumeclient", version: "0.0.1" }, { capabilities: {} });

let closing = false;
client.onerror = (err) => {
  const msg = `${err?.message ?? err}`;
  if (msg.startsWith("SSE stream disconnected")) {
    // A cut seen as an error: the SDK schedules a GET with
    // Last-Event-ID after the server's retry interval.
    out.disconnects++;
  } else if (msg.includes("progress notification for an unknown token")) {
    // typescript-sdk#2580: a progress notification just before its
    // response may find its handler gone. The client's race, not a gap.
    out.warnings.push(msg);
  } else if (!closing) {
    out.errors.push(`onerror: ${msg}`);
  }
};

let logsSeen;
const allLogs = new Promise((resolve) => (logsSeen = resolve));
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  out.logs.push(n.params.data);
  if (out.logs.length >= steps) logsSeen();
});

async function main() {
  await client.connect(transport, { timeout: totalMs });
  out.sessionId = transport.sessionId ?? "";
  const res = await client.callTool({ name: "slow", arguments: { ms, steps } }, undefined, {
    onprogress: (p) => out.progress.push(p.progress),
    timeout: totalMs,
    maxTotalTimeout: totalMs,
  });
  out.result = (res.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");
  await allLogs;
  closing = true;
  await transport.terminateSession();
  await client.close();
}

main().then(finish, (err) => {
  out.errors.push(`${err?.message ?? err}`);
  finish();
});
