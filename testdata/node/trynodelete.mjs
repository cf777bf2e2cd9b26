// trynodelete is one quick try of an MCP server through the bridge, as a
// person tries one with the Inspector's CLI or mcp-remote: the official
// TypeScript SDK client connects (initialize, notifications/initialized,
// then its GET stream), lists the tools, and its process ends without a
// DELETE (the SDK's close sends none; only terminateSession does).
//
// Usage: node trynodelete.mjs <url> [abandon]
//
// With "abandon", it first starts a second session that it leaves right
// after notifications/initialized, without a stream or a request, as
// mcp-remote did on each run. It prints one JSON line:
//
//   {sessionIds: [...], tools: N}
//
// and exits. Works on Node 20 and on the Node 22 under node_modules.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, mode] = process.argv.slice(2);
if (!url) {
  console.error("usage: node trynodelete.mjs <url> [abandon]");
  process.exit(2);
}
const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
const sessionIds = [];

if (mode === "abandon") {
  const r = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "probe", version: "1" } } }),
  });
  const sid = r.headers.get("mcp-session-id");
  await r.text();
  const n = await fetch(url, {
    method: "POST",
    headers: { ...headers, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  await n.text();
  sessionIds.push(sid);
}

// The SDK opens its GET stream on its own once initialized; the try ends
// only once it is open, as a person's does (they read the tools first).
let listening;
const opened = new Promise((resolve) => (listening = resolve));
const watched = async (input, init) => {
  const r = await fetch(input, init);
  if ((init?.method ?? "GET") === "GET" && r.ok) listening();
  return r;
};
const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: watched });
const client = new Client({ name: "mcp-bridge-trynodelete", version: "0.0.1" });
await client.connect(transport);
const { tools } = await client.listTools();
await opened;
sessionIds.push(transport.sessionId);
console.log(JSON.stringify({ sessionIds, tools: tools.length }));
// The process ends here, its GET stream with it: no DELETE.
process.exit(0);
