// The official MCP TypeScript SDK as a foreign client of `dont mcp`.
//
//   node client.mjs [BINARY [PROJECT_DIR]]
//
// BINARY (else $DONT_MCP_BINARY, else `dont` on PATH) is started as
// `BINARY mcp` in PROJECT_DIR (else $DONT_MCP_PROJECT_DIR, else the current
// folder), with this process's environment, over the SDK's
// StdioClientTransport. The script lists the tools, checks every one
// declares an outputSchema (the SDK then validates each structuredContent
// against it, and so does an Ajv validator of the SDK's own here), runs a
// short session (conclude, assume, dismiss with the request id), confirms a
// gated lock through elicitation (declined, then accepted, as the person in
// the host would) and tries the attacks an agent on MCP might (approver and
// admin tools, skip_confirmation, answering its own escalation). It prints one JSON summary line on stdout and exits 1
// if any expectation failed, naming each on stderr.
//
// Run from the repository root: npm ci --prefix cli/dont/testdata/mcpclient
// then go test ./cli/dont/ -run TypeScript -v (the Go test drives this).

import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";

const sdkVersion = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"),
).version;
const binary = process.argv[2] || process.env.DONT_MCP_BINARY || "dont";
const projectDir = process.argv[3] || process.env.DONT_MCP_PROJECT_DIR || process.cwd();

const failures = [];
let checks = 0;
// expect records a failed expectation and goes on, so one run names every one.
function expect(cond, message) {
  checks++;
  if (!cond) failures.push(message);
  return cond;
}
// A step whose expectation failed cannot go on: it throws.
class Stop extends Error {}
function must(cond, message) {
  if (!expect(cond, message)) throw new Stop(message);
}

const summary = { ok: false, sdk: sdkVersion, binary, project_dir: projectDir };
let serverStderr = "";

const transport = new StdioClientTransport({
  command: binary,
  args: ["mcp"],
  cwd: projectDir,
  // The caller's environment as it is (the SDK merges it over its default
  // safe list): the Go test clears DONT_* there and sets XDG_CACHE_HOME.
  env: Object.fromEntries(Object.entries(process.env).filter(([, v]) => typeof v === "string")),
  stderr: "pipe",
});
transport.stderr?.on("data", (b) => {
  if (serverStderr.length < 8000) serverStderr += b.toString();
});
// The client declares elicitation: the person in the host answers each
// elicitation/create with the next queued action.
const client = new Client({ name: "dont-ts-sdk-test", version: sdkVersion }, { capabilities: { elicitation: {} } });
const person = { answers: [], asked: [] };
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  person.asked.push(req.params.message);
  const action = person.answers.shift() ?? "decline";
  return action === "accept" ? { action, content: {} } : { action };
});
// notifications/resources/updated, by URI, each resolving the next wait.
const updates = { seen: [], waiters: [] };
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  updates.seen.push(n.params.uri);
  updates.waiters = updates.waiters.filter((w) => (w.uri === n.params.uri ? (w.resolve(true), false) : true));
});
// updated resolves true at the next update of uri, false after 10 s.
function updated(uri) {
  return new Promise((resolve) => {
    updates.waiters.push({ uri, resolve });
    setTimeout(() => resolve(false), 10000);
  });
}
async function readResource(uri) {
  const r = await client.readResource({ uri });
  must(r.contents.length === 1 && r.contents[0].mimeType === "application/json", `resources/read ${uri}: ${JSON.stringify(r.contents)}`);
  return JSON.parse(r.contents[0].text);
}
const ajv = new AjvJsonSchemaValidator();
const outputValidators = {};
let validated = 0;

// call runs one tool and checks the result is the dont envelope: one text
// item holding it as JSON, the same envelope as structuredContent, and
// isError exactly when ok is false.
async function call(name, args) {
  const res = await client.callTool({ name, arguments: args });
  const where = `${name} ${JSON.stringify(args)}`;
  must(Array.isArray(res.content) && res.content.length === 1 && res.content[0].type === "text",
    `${where}: want one text content item, got ${JSON.stringify(res.content)}`);
  let env;
  try {
    env = JSON.parse(res.content[0].text);
  } catch {
    must(false, `${where}: the text content is not one JSON envelope: ${res.content[0].text}`);
  }
  must(isDeepStrictEqual(res.structuredContent, env),
    `${where}: structuredContent differs from the text envelope:\n${JSON.stringify(res.structuredContent)}\n${res.content[0].text}`);
  must((res.isError === true) === (env.ok !== true),
    `${where}: isError ${res.isError} for envelope ok=${env.ok}`);
  // The SDK validated structuredContent against the outputSchema already
  // (callTool throws otherwise); an Ajv validator checks it once more.
  const v = outputValidators[name];
  if (expect(v !== undefined, `${where}: no outputSchema validator`)) {
    const r = v(res.structuredContent);
    expect(r.valid, `${where}: structuredContent does not match the outputSchema: ${r.errorMessage}`);
    validated++;
  }
  return { env, data: env.data ?? {}, isError: res.isError === true };
}

// refused calls a tool MCP must not have; the SDK surfaces the server's
// refusal as a thrown protocol error (or, were it a tool result, isError).
async function refused(name, args) {
  try {
    const res = await client.callTool({ name, arguments: args });
    const text = res.content?.[0]?.text ?? "";
    return { rejected: res.isError === true, how: "isError", message: text.slice(0, 200) };
  } catch (e) {
    return { rejected: true, how: "error", code: e.code ?? null, message: String(e.message ?? e).slice(0, 200) };
  }
}

const forbiddenTool = (n) =>
  n === "approvals_approve" || n === "approvals_refuse" || n.startsWith("confirmations_") || n.startsWith("tokens_");

async function main() {
  await client.connect(transport); // initialize + initialized
  const server = client.getServerVersion();
  summary.server = { name: server?.name, version: server?.version };
  must(server?.name === "dont", `initialize: server name ${JSON.stringify(server?.name)}, want "dont"`);
  expect(client.getServerCapabilities()?.tools !== undefined, "initialize: the server declares no tools capability");

  // tools/list, every page.
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  const by = Object.fromEntries(tools.map((t) => [t.name, t]));
  summary.tools = tools.map((t) => t.name).sort();
  must(summary.tools.length > 0, "tools/list: no tools");
  for (const need of ["conclude", "assume", "dismiss", "ignore", "sessions_open", "approvals_frames", "escalate"]) {
    must(need in by, `tools/list: no ${need} tool`);
  }

  // Every tool declares its output: the envelope, data typed per kind.
  summary.tools_without_output_schema = tools.filter((t) => !t.outputSchema).map((t) => t.name);
  expect(summary.tools_without_output_schema.length === 0,
    `tools without outputSchema: ${summary.tools_without_output_schema.join(", ")}`);
  for (const t of tools) {
    if (t.outputSchema) outputValidators[t.name] = ajv.getValidator(t.outputSchema);
  }

  // Attacks on the surface: no approver or admin tool, no skip parameter.
  summary.approver_or_admin_tools = summary.tools.filter(forbiddenTool);
  expect(summary.approver_or_admin_tools.length === 0,
    `tools/list exposes approver/admin tools: ${summary.approver_or_admin_tools.join(", ")}`);
  summary.schemas_with_skip = tools.filter((t) => JSON.stringify(t.inputSchema).includes("skip_confirmation")).map((t) => t.name);
  expect(summary.schemas_with_skip.length === 0,
    `input schemas advertise skip_confirmation: ${summary.schemas_with_skip.join(", ")}`);

  // Annotations are truthful.
  const ann = (n) => by[n]?.annotations ?? {};
  for (const n of ["show", "list", "spawns", "approvals_list"]) {
    expect(ann(n).readOnlyHint === true && ann(n).idempotentHint === true,
      `${n}: annotations ${JSON.stringify(ann(n))}, want readOnlyHint and idempotentHint true`);
  }
  for (const n of ["lock", "ignore", "spawns_cancel", "approvals_cancel"]) {
    expect(ann(n).readOnlyHint !== true && ann(n).destructiveHint === true,
      `${n}: annotations ${JSON.stringify(ann(n))}, want destructiveHint true`);
  }
  for (const n of ["conclude", "define", "assume"]) {
    expect(ann(n).destructiveHint === false, `${n}: annotations ${JSON.stringify(ann(n))}, want destructiveHint false`);
    expect(ann(n).idempotentHint === false, `${n}: annotations ${JSON.stringify(ann(n))}, want idempotentHint false`);
  }
  for (const n of ["lock", "spawns_cancel"]) {
    expect(ann(n).idempotentHint === true, `${n}: annotations ${JSON.stringify(ann(n))}, want idempotentHint true`);
  }
  summary.annotation_kinds = new Set(tools.map((t) => JSON.stringify(t.annotations ?? {}))).size;
  expect(summary.annotation_kinds >= 4, `annotations are near uniform: ${summary.annotation_kinds} distinct`);

  // Pending spawns and open questions are resources a host subscribes to.
  expect(client.getServerCapabilities()?.resources?.subscribe === true, "initialize: no subscribable resources capability");
  const resources = (await client.listResources()).resources.map((r) => r.uri);
  summary.resources = resources;
  expect(resources.includes("dont://spawns/pending") && resources.includes("dont://approvals/open"),
    `resources/list: ${JSON.stringify(resources)}`);
  const before = await readResource("dont://spawns/pending");
  expect(before.ok === true && before.data.count === 0, `dont://spawns/pending before any spawn: ${JSON.stringify(before)}`);
  await client.subscribeResource({ uri: "dont://spawns/pending" });
  const spawnIssued = updated("dont://spawns/pending");

  // A short session: conclude, assume (a harness spawn request), dismiss
  // with the request id.
  const c = await call("conclude", { statement: "water boils at 100 C at sea level", ref: ["https://example.org/boiling"] });
  must(c.env.ok === true && c.env.envelope_kind === "claim" && c.data.status === "unverified",
    `conclude: ${JSON.stringify(c.env)}`);
  const id = c.data.id;
  const a = await call("assume", { id });
  must(a.env.ok === true && a.env.envelope_kind === "spawn_request", `assume: want a spawn_request envelope, got ${JSON.stringify(a.env)}`);
  expect(a.env.meta?.mode === "harness", `assume: meta.mode ${JSON.stringify(a.env.meta?.mode)}, want "harness"`);
  const ctx = a.data.context ?? {};
  expect(Array.isArray(ctx.allowed_tools) && ctx.allowed_tools.length > 0,
    `assume: data.context.allowed_tools ${JSON.stringify(ctx.allowed_tools)}, want a non-empty list`);
  expect(Array.isArray(ctx.forbidden_tools), `assume: data.context.forbidden_tools ${JSON.stringify(ctx.forbidden_tools)}, want a list`);
  const rid = a.data.request_id;
  must(typeof rid === "string" && rid.startsWith("spawn:"), `assume: data.request_id ${JSON.stringify(rid)}`);
  expect(await spawnIssued, "no notifications/resources/updated for dont://spawns/pending after assume");
  const pendingNow = await readResource("dont://spawns/pending");
  expect(JSON.stringify(pendingNow).includes(rid), `dont://spawns/pending after assume: ${JSON.stringify(pendingNow)}`);
  summary.resource_updates = updates.seen.length;
  const d = await call("dismiss", { id, evidence: ["https://example.org/boiling"], request_id: rid });
  expect(d.env.ok === true && d.data.status === "verified", `dismiss: want ok and status verified, got ${JSON.stringify(d.env)}`);
  summary.session = {
    claim: id,
    request_id: rid,
    mode: a.env.meta?.mode,
    allowed_tools: ctx.allowed_tools,
    forbidden_tools: ctx.forbidden_tools,
    dismiss_ok: d.env.ok,
    status: d.data.status,
    outcome: d.data.resolution?.outcome ?? null,
  };

  // The outputSchema bites: a claim envelope is not what assume returns.
  const bad = { ...c.env, envelope_kind: "spawn_request" };
  expect(!outputValidators.assume(bad).valid, "assume's outputSchema accepts a claim envelope as a spawn_request");

  // A gated call is confirmed by the person in the host: decline, then
  // accept. Declined, nothing runs and nothing is held.
  person.answers.push("decline");
  const declined = await call("lock", { id, reason: "settled by the measurement" });
  const afterDecline = await call("show", { id });
  person.answers.push("accept");
  const accepted = await call("lock", { id, reason: "settled by the measurement" });
  summary.elicitation = {
    asked: person.asked.length,
    message_names_call: person.asked.every((m) => m.includes("lock") && m.includes(id)),
    declined_code: declined.data.code ?? null,
    declined_is_error: declined.isError,
    status_after_decline: afterDecline.data.status ?? null,
    accepted_kind: accepted.env.envelope_kind,
    accepted_status: accepted.data.status ?? null,
  };
  expect(person.asked.length === 2, `lock asked the person ${person.asked.length} times for 2 calls`);
  expect(declined.isError && declined.data.code === "confirmation-declined",
    `a declined lock: want isError with code confirmation-declined, got ${JSON.stringify(declined.env)}`);
  expect(afterDecline.data.status === "verified", `a declined lock ran: the claim is ${afterDecline.data.status}`);
  expect(!accepted.isError && accepted.data.status === "locked", `an accepted lock: ${JSON.stringify(accepted.env)}`);

  // Attacks by call: the approver and admin tools do not exist here.
  summary.calls = {};
  for (const [name, args] of [
    ["approvals_approve", { id: "apr:01HX05A9K8VP0000000000000A" }],
    ["tokens_create", { role: "admin" }],
  ]) {
    const r = await refused(name, args);
    summary.calls[name] = r;
    expect(r.rejected, `${name} ran over MCP: ${JSON.stringify(r)}`);
    expect(/unknown tool/i.test(r.message), `${name}: want an unknown tool error, got ${JSON.stringify(r)}`);
  }

  // skip_confirmation is an unknown parameter, and the call does not run.
  const victim = (await call("conclude", { statement: "the claim an agent tries to ignore unconfirmed" })).data.id;
  const ig = await call("ignore", { id: victim, reason: "out of scope here", skip_confirmation: true });
  summary.ignore_skip_confirmation = { isError: ig.isError, code: ig.data.code ?? null };
  expect(ig.isError && ig.env.envelope_kind === "error" && ig.data.code === "usage",
    `ignore with skip_confirmation: want isError with code usage, got ${JSON.stringify(ig.env)}`);
  const still = await call("show", { id: victim });
  summary.ignore_skip_confirmation.status_after = still.data.status ?? null;
  expect(still.data.status === "unverified", `ignore with skip_confirmation ran: the claim is ${still.data.status}`);

  // Reading frames over MCP never makes a session answerable.
  const ses = (await call("sessions_open", { tier: "read-only" })).data.session_id;
  must(typeof ses === "string", "sessions_open: no session_id");
  const fr = await call("approvals_frames", { session: ses });
  expect(fr.env.ok === true, `approvals_frames: ${JSON.stringify(fr.env)}`);
  const esc = await call("escalate", { session: ses, call: "c1", to: "danger-full-access", reason: "installs", no_wait: true });
  summary.escalate_after_frames = { isError: esc.isError, code: esc.data.code ?? null };
  expect(esc.isError && esc.data.code === "no-subscriber",
    `escalate after approvals_frames over MCP: want isError with code no-subscriber, got ${JSON.stringify(esc.env)}`);
}

let crashed = null;
try {
  await main();
} catch (e) {
  if (!(e instanceof Stop)) {
    crashed = String(e?.stack ?? e);
    failures.push(`unexpected error: ${e?.message ?? e}`);
  }
} finally {
  await client.close().catch(() => {});
}
summary.checks = checks;
summary.validated = validated;
summary.failures = failures;
summary.ok = failures.length === 0;
process.stdout.write(JSON.stringify(summary) + "\n");
if (!summary.ok) {
  for (const f of failures) process.stderr.write(`FAIL: ${f}\n`);
  if (crashed) process.stderr.write(crashed + "\n");
  if (serverStderr) process.stderr.write(`dont mcp stderr:\n${serverStderr}\n`);
  process.exitCode = 1;
}
