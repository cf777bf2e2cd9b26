// aggregateclient drives mcp-bridge's aggregate endpoint (/mcp, several
// servers as one) with the official TypeScript SDK v2 client
// (@modelcontextprotocol/client) pinned to the stateless 2026-07-28
// revision, so the tests meet the aggregate's 2026-07-28 requests with a
// client they did not write.
//
// Usage: node aggregateclient.mjs <url> <server>...
//
// It connects (server/discover), lists tools and resources, calls
// SERVER__echo of each server given, then everything__trigger-sampling-request
// and everything__trigger-elicitation-request when listed (MRTR: the SDK
// fulfils the input_required rounds through the handlers below and retries),
// and reads the first resource listed. It prints one JSON line:
//
//   {protocolVersion, serverName, capabilities, tools: [names],
//    echo: {server: text}, sample, elicit, read: {uri, text}, errors: [strings]}
//
// and exits 0 if errors is empty, 1 otherwise. Bounded by
// AGGREGATECLIENT_TIMEOUT_MS (default 30000).

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, ...servers] = process.argv.slice(2);
if (!url) {
  console.error("usage: node aggregateclient.mjs <url> <server>...");
  process.exit(2);
}
const totalMs = Number(process.env.AGGREGATECLIENT_TIMEOUT_MS || 30000);
const out = { protocolVersion: "", serverName: "", capabilities: [], tools: [], echo: {}, sample: "", elicit: "", read: {}, errors: [] };
const deadline = setTimeout(() => {
  console.log(JSON.stringify({ ...out, errors: [...out.errors, "timeout"] }));
  process.exit(1);
}, totalMs);

const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client(
  { name: "mcp-bridge-aggregateclient", version: "0.0.1" },
  { capabilities: { sampling: {}, elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
);
client.onerror = (err) => out.errors.push(`onerror: ${err?.message ?? err}`);
client.setRequestHandler("sampling/createMessage", async () => ({
  role: "assistant",
  content: { type: "text", text: "sampled by aggregateclient" },
  model: "aggregateclient-fake-model",
  stopReason: "endTurn",
}));
client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { name: "Ada Lovelace", check: true } }));

const text = (r) => (r?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
async function step(name, fn) {
  try {
    return await fn();
  } catch (err) {
    out.errors.push(`${name}: ${err?.message ?? err}`);
    return undefined;
  }
}
const opts = { timeout: totalMs, maxTotalTimeout: totalMs };

async function main() {
  await step("connect", () => client.connect(transport, opts));
  if (out.errors.length > 0) return;
  out.protocolVersion = client.getNegotiatedProtocolVersion() ?? "";
  out.serverName = client.getServerVersion()?.name ?? "";
  out.capabilities = Object.keys(client.getDiscoverResult()?.capabilities ?? {}).sort();
  const tools = await step("tools/list", () => client.listTools(undefined, opts));
  out.tools = (tools?.tools ?? []).map((t) => t.name);
  for (const server of servers) {
    out.echo[server] = text(await step(`${server}__echo`, () => client.callTool({ name: `${server}__echo`, arguments: { message: `hello ${server}` } }, opts)));
  }
  if (out.tools.includes("everything__trigger-sampling-request")) {
    out.sample = text(await step("sampling", () => client.callTool({ name: "everything__trigger-sampling-request", arguments: { prompt: "hi", maxTokens: 10 } }, opts)));
  }
  if (out.tools.includes("everything__trigger-elicitation-request")) {
    out.elicit = text(await step("elicitation", () => client.callTool({ name: "everything__trigger-elicitation-request", arguments: {} }, opts)));
  }
  const resources = await step("resources/list", () => client.listResources(undefined, opts));
  const first = resources?.resources?.[0]?.uri;
  if (first) {
    const read = await step("resources/read", () => client.readResource({ uri: first }, opts));
    out.read = { uri: read?.contents?.[0]?.uri ?? "", text: (read?.contents?.[0]?.text ?? "").slice(0, 80) };
  }
}

await main();
clearTimeout(deadline);
console.log(JSON.stringify(out));
process.exit(out.errors.length > 0 ? 1 : 0);
