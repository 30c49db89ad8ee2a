// The official MCP TypeScript SDK waiting through a long approval.
//
//   node wait.mjs BINARY PROJECT_DIR SESSION [TIMEOUT_MS]
//
// Starts `BINARY mcp` in PROJECT_DIR and calls a blocking escalate on
// SESSION (a session a person watches) with the SDK's default request
// timeout (DEFAULT_REQUEST_TIMEOUT_MSEC, 60 s), resetTimeoutOnProgress and
// an onprogress callback (so the request carries a progressToken), as a
// host that resets its timeout on progress does. The Go test
// (TestTheTypeScriptMCPSDKWaitsThroughANinetySecondApproval) answers the
// question after 90 s. With TIMEOUT_MS the call instead has that timeout
// and no reset on progress, as a host that does not reset: the SDK gives
// up, sends notifications/cancelled, and the error is in the summary
// (TestTheTypeScriptMCPSDKGivingUpEndsTheQuestionAsTheAskingClientGone).
// Prints one JSON summary line on stdout: the envelope escalate returned
// (or the error), the progress reports and the longest gap between them.

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from "@modelcontextprotocol/sdk/shared/protocol.js";

const sdkVersion = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"),
).version;
const [binary, projectDir, session, timeoutArg] = process.argv.slice(2);
const timeout = timeoutArg ? Number(timeoutArg) : undefined;

const summary = { ok: false, sdk: sdkVersion, default_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MSEC, progress: [], max_gap_ms: 0 };
let serverStderr = "";
const transport = new StdioClientTransport({
  command: binary,
  args: ["mcp"],
  cwd: projectDir,
  env: Object.fromEntries(Object.entries(process.env).filter(([, v]) => typeof v === "string")),
  stderr: "pipe",
});
transport.stderr?.on("data", (b) => {
  if (serverStderr.length < 8000) serverStderr += b.toString();
});
const client = new Client({ name: "dont-ts-sdk-wait", version: sdkVersion });

try {
  await client.connect(transport);
  const start = Date.now();
  let last = start;
  const res = await client.callTool(
    { name: "escalate", arguments: { session, call: "deploy-1", to: "workspace-write", reason: "writes the release notes" } },
    undefined,
    {
      // Without TIMEOUT_MS the SDK's default (60 s) applies, reset by progress.
      ...(timeout ? { timeout, resetTimeoutOnProgress: false } : { resetTimeoutOnProgress: true }),
      onprogress: (p) => {
        const now = Date.now();
        summary.max_gap_ms = Math.max(summary.max_gap_ms, now - last);
        last = now;
        summary.progress.push({ at_ms: now - start, progress: p.progress, total: p.total ?? null, message: p.message ?? "" });
      },
    },
  );
  summary.elapsed_ms = Date.now() - start;
  summary.is_error = res.isError === true;
  summary.envelope = JSON.parse(res.content[0].text);
  summary.ok = true;
} catch (e) {
  summary.error = String(e?.message ?? e);
  summary.server_stderr = serverStderr;
  if (timeout) {
    // The SDK gave up and sent notifications/cancelled: read the question
    // over the same connection until it has ended (at most 10 s), so that
    // closing the client does not race the server ending it.
    for (let i = 0; i < 100; i++) {
      const r = await client.callTool({ name: "approvals_list", arguments: { session } }).catch(() => null);
      const a = r ? JSON.parse(r.content[0].text).data?.approvals?.[0] : undefined;
      if (a && a.state === "resolved") {
        summary.question = a;
        break;
      }
      await new Promise((res) => setTimeout(res, 100));
    }
  }
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(summary) + "\n");
if (!summary.ok) process.exitCode = 1;
