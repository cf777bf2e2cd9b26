// vanishclient connects to an MCP server over Streamable HTTP with the
// official TypeScript SDK, calls badchild's pid tool and prints one JSON
// line, {"sessionId": ..., "pid": N}, then calls badchild's hang tool and
// waits for good. The test kills it there: a client that vanishes with a
// call in flight and without DELETE, as the Inspector CLI and mcp-remote
// do when their process ends.
//
// Usage: node vanishclient.mjs <url>
// With VANISH_TOKEN set, every request carries it as a bearer token. On a
// stateless server, sessionId is null.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.argv[2];
if (!url) {
  console.error("usage: node vanishclient.mjs <url>");
  process.exit(2);
}
const token = process.env.VANISH_TOKEN;
const transport = new StreamableHTTPClientTransport(new URL(url),
  token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : undefined);
const client = new Client({ name: "mcp-bridge-vanishclient", version: "0.0.1" });
await client.connect(transport);
const res = await client.callTool({ name: "pid", arguments: {} });
console.log(JSON.stringify({ sessionId: transport.sessionId ?? null, pid: Number(res.content[0].text) }));
// An hour: longer than any test, so only the kill ends it.
await client.callTool({ name: "hang", arguments: {} }, undefined, { timeout: 3600000 });
