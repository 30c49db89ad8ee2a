// A client of dont's API typed only by the served OpenAPI document:
// TestATypeScriptClientGeneratedFromTheServedDocumentTypechecks
// (internal/httpapi/openapilint_test.go) generates ./api.d.ts from it with
// openapi-typescript and typechecks this file with tsc --strict. Nothing
// here is cast: every read is typed by the document.
import createClient from "openapi-fetch";
import type { components, paths } from "./api";

type Schemas = components["schemas"];
type ErrorCode = Schemas["ErrorCode"];

// What went wrong, from an error envelope: a code from the enum and the
// first step of its remediation (never empty).
function explain(e: Schemas["ErrorEnvelope"]): string {
  const code: ErrorCode = e.data.code;
  return `${code}: ${e.data.message} (next: ${e.data.remediation[0].command})`;
}

// A whole lifecycle: health, the tool list, a claim concluded, shown and
// listed, a verification spawn asked for, a gated call held for a person.
export async function lifecycle(baseUrl: string, token: string): Promise<string[]> {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
  const seen: string[] = [];

  const health = await api.GET("/v1/health");
  if (health.error) throw new Error(explain(health.error));
  const up: true = health.data.data.ok;
  seen.push(`up ${up}`);

  // GET /v1/tools: the first tool's name, its roles and its argument schema.
  const listed = await api.GET("/v1/tools", { headers: { "X-Dont-CLI-Caps": "cli-confirm-v1" } });
  if (listed.error) throw new Error(explain(listed.error));
  const first = listed.data.data.tools[0];
  const name: string = first.name;
  const roles: string[] = first.roles;
  const readOnly: boolean | undefined = first.annotations.read_only;
  const args: { [key: string]: unknown } = first.input_schema;
  seen.push(`${name} (${roles.join(", ")}, read-only ${readOnly}, ${Object.keys(args).length} schema keys)`);

  const concluded = await api.POST("/v1/tools/conclude", {
    body: { args: { statement: "water boils at 100 C", confidence: 0.9 } },
    headers: { "Idempotency-Key": "lifecycle-1" },
  });
  if (concluded.error) throw new Error(explain(concluded.error));
  const id: string = concluded.data.data.id;
  const status: Schemas["ClaimData"]["status"] = concluded.data.data.status;
  seen.push(`${id} ${status}`);

  const shown = await api.POST("/v1/tools/show", { body: { args: { id, history: true } } });
  if (shown.error) throw new Error(explain(shown.error));
  switch (shown.data.envelope_kind) {
    case "claim":
    case "term":
      seen.push(`history ${(shown.data.data.history ?? []).length}`);
      break;
    case "spawn_request":
      seen.push(`spawn ${shown.data.data.request_id}`);
      break;
  }

  const list = await api.POST("/v1/tools/list", { body: {} });
  if (list.error) throw new Error(explain(list.error));
  const count: number = list.data.data.count;
  seen.push(`listed ${count}`);

  const assumed = await api.POST("/v1/tools/assume", { body: { args: { id } } });
  if (assumed.error) {
    seen.push(explain(assumed.error));
  } else if (assumed.data.envelope_kind === "spawn_request") {
    const callback: string | undefined = assumed.data.data.callback.token;
    seen.push(`${assumed.data.data.request_kind} ${assumed.data.data.request_id} ${callback ? "with" : "without"} a callback token`);
  }

  // A gated call without cli_confirmed is held (202) for an approver.
  const locked = await api.POST("/v1/tools/lock", { body: { args: { id } } });
  if (locked.error) {
    seen.push(explain(locked.error));
  } else if (locked.data.envelope_kind === "confirmation") {
    seen.push(`held ${locked.response.status}`);
  } else {
    seen.push(`${locked.data.data.id} ${locked.data.data.status}`);
  }
  return seen;
}

// A webhook receiver's dispatch (after verifying the signature): each
// event's data is typed by the document's webhooks.
export type WebhookBody =
  | Schemas["ApprovalAskedWebhook"]
  | Schemas["ApprovalEndedWebhook"]
  | Schemas["SpawnRequestedWebhook"]
  | Schemas["SpawnResolvedWebhook"]
  | Schemas["SpawnTimeoutWebhook"]
  | Schemas["ConfirmationHeldWebhook"]
  | Schemas["HookTestWebhook"];

export function describe(body: WebhookBody): string {
  switch (body.type) {
    case "approval.asked":
      return `${body.data.requester ?? "someone"} asks for ${body.data.to_tier} until ${body.data.deadline}`;
    case "approval.ended":
      return `${body.data.approval_id} ${body.data.verdict ?? "ended"}`;
    case "spawn.requested":
    case "spawn.resolved":
    case "spawn.timeout":
      return `${body.type} ${body.data.request_id}`;
    case "confirmation.held":
      return `${body.data.tool} held as ${body.data.confirmation_id}`;
    case "hook.test":
      return `test of ${body.data.hook_id}`;
  }
}
