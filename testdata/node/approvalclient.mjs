// approvalclient makes one tools/call that the bridge holds for a human's
// approval, with an official TypeScript SDK client whose user is asked by
// the bridge, so mcp-bridge's tests can check the caller's channel against
// clients they did not write:
//
//   - v1-streamable, v1-sse: the SDK v1 client (@modelcontextprotocol/sdk)
//     over Streamable HTTP or the legacy HTTP+SSE transport, declaring form
//     elicitation; the bridge's elicitation/create reaches its handler;
//   - v2: the SDK v2 client (@modelcontextprotocol/client) pinned to
//     2026-07-28; the bridge's input_required result reaches the same
//     handler through the SDK's MRTR, which retries with the answer and the
//     requestState inside the one callTool.
//
// Usage: node approvalclient.mjs <v1-streamable|v1-sse|v2> <url>
//
// Environment:
//
//   APPROVAL_TOKEN       a bearer token sent on every request
//   APPROVAL_ANSWER      what the handler answers: approve (accept, approve:
//                        true, the default), deny (accept, approve: false),
//                        decline, wait (never answers: it waits until the
//                        bridge withdraws the question, or forever), or late
//                        (approves after APPROVAL_DELAY_MS: a user who answers
//                        after the approval expired)
//   APPROVAL_TOOL        the tool called (default echo), with arguments
//   APPROVAL_ARGS        as JSON (default {"message":"approved call"})
//   APPROVAL_TIMEOUT_MS  the deadline of the whole run (default 30000)
//
// It prints one JSON line to stdout:
//
//   {asked: [the question's message, each time asked], schema: the form,
//    withdrawn: n (questions the bridge withdrew), progress: n,
//    text: the result's text, isError, error: the call's error, if any,
//    retries: n (v2: POSTs that carried a requestState), errors: [...]}
//
// It exits 0 unless something unexpected happened (errors non-empty).

const [mode, url] = process.argv.slice(2);
if (!["v1-streamable", "v1-sse", "v2"].includes(mode) || !url) {
  console.error("usage: node approvalclient.mjs <v1-streamable|v1-sse|v2> <url>");
  process.exit(2);
}
const totalMs = Number(process.env.APPROVAL_TIMEOUT_MS || 30000);
const token = process.env.APPROVAL_TOKEN || "";
const answer = process.env.APPROVAL_ANSWER || "approve";
const tool = process.env.APPROVAL_TOOL || "echo";
const delayMs = Number(process.env.APPROVAL_DELAY_MS || 0);
const args = JSON.parse(process.env.APPROVAL_ARGS || '{"message":"approved call"}');

const out = { asked: [], schema: null, withdrawn: 0, progress: 0, text: "", isError: false, error: "", retries: 0, errors: [] };
const deadline = setTimeout(() => {
  console.log(JSON.stringify({ ...out, errors: [...out.errors, "timeout"] }));
  process.exit(1);
}, totalMs);
const headers = token ? { Authorization: `Bearer ${token}` } : {};

// elicit answers the bridge's question as APPROVAL_ANSWER says.
async function elicit(req, extra) {
  out.asked.push(req.params.message ?? "");
  out.schema = req.params.requestedSchema ?? null;
  switch (answer) {
    case "approve":
      return { action: "accept", content: { approve: true } };
    case "deny":
      return { action: "accept", content: { approve: false } };
    case "decline":
      return { action: "decline" };
    case "late":
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return { action: "accept", content: { approve: true } };
  }
  // wait: until the bridge withdraws the question (notifications/cancelled).
  await new Promise((resolve) => extra?.signal?.addEventListener("abort", () => { out.withdrawn++; resolve(); }));
  return { action: "cancel" };
}

function text(result) {
  return (result?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

async function v1() {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  const { SSEClientTransport } = await import("@modelcontextprotocol/sdk/client/sse.js");
  const { ElicitRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
  const transport =
    mode === "v1-streamable"
      ? new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } })
      : new SSEClientTransport(new URL(url), {
          requestInit: { headers },
          eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers ?? {}), ...headers } }) },
        });
  const client = new Client({ name: "mcp-bridge-approvalclient", version: "0.0.1" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, elicit);
  await client.connect(transport);
  return { client, call: (opts) => client.callTool({ name: tool, arguments: args }, undefined, opts) };
}

async function v2() {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const observe = async (input, init) => {
    try {
      if (JSON.parse(init?.body ?? "null")?.params?.requestState !== undefined) out.retries++;
    } catch {
      // not JSON
    }
    return fetch(input, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: observe, requestInit: { headers } });
  const client = new Client(
    { name: "mcp-bridge-approvalclient", version: "0.0.1" },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  client.setRequestHandler("elicitation/create", elicit);
  await client.connect(transport);
  return { client, call: (opts) => client.callTool({ name: tool, arguments: args }, opts) };
}

try {
  const { client, call } = mode === "v2" ? await v2() : await v1();
  try {
    // A progress callback makes the SDK send a progress token; resetting
    // the timeout on progress is what keeps a client waiting for a human.
    const r = await call({ timeout: totalMs, onprogress: () => out.progress++, resetTimeoutOnProgress: true });
    out.text = text(r);
    out.isError = r?.isError === true;
  } catch (err) {
    out.error = err?.message ?? String(err);
  }
  await client.close();
} catch (err) {
  out.errors.push(`${err?.message ?? err}`);
}
clearTimeout(deadline);
console.log(JSON.stringify(out));
process.exit(out.errors.length > 0 ? 1 : 0);
