package httpapi

import (
	"reflect"

	"github.com/dont-cli/dont/internal/hooks"
)

// webhookEvent is one event a webhook subscription receives
// (docs/hooks.md#events): its data's Go type and when it is sent.
type webhookEvent struct {
	data reflect.Type
	when string
}

// testData is hook.test's data.
type testData struct {
	HookID string `json:"hook_id"`
}

// webhookEvents are every event a delivery carries. TestEveryWebhookEventIsInTheDocument
// fails on an event added to internal/hooks without its row.
var webhookEvents = map[hooks.EventType]webhookEvent{
	hooks.ApprovalAsked:    {reflect.TypeFor[hooks.ApprovalData](), "a question is asked (not for a request refused before it became one)"},
	hooks.ApprovalEnded:    {reflect.TypeFor[hooks.ApprovalData](), "the question is resolved: approved, refused, timed out or cancelled"},
	hooks.ApprovalReminder: {reflect.TypeFor[hooks.ApprovalData](), "nobody has answered the question by the person's share of its deadline (approval_remind_at); sent once per question"},
	hooks.SpawnRequested:   {reflect.TypeFor[hooks.SpawnData](), "a spawn request is issued (assume, overlook, guess)"},
	hooks.SpawnResolved:    {reflect.TypeFor[hooks.SpawnData](), "a spawn is resolved by its callback, an answer, a cancel or a provider failure"},
	hooks.SpawnTimeout:     {reflect.TypeFor[hooks.SpawnData](), "a spawn timed out"},
	hooks.ConfirmationHeld: {reflect.TypeFor[hooks.ConfirmationData](), "a gated call is held for confirmation (the call's arguments are not sent)"},
	hooks.Test:             {reflect.TypeFor[testData](), "dont hooks test: a signed test message to one subscription"},
}

// webhookPayloadName is an event's body component: approval.asked →
// ApprovalAskedWebhook.
func webhookPayloadName(t hooks.EventType) string { return typeName(string(t)) + "Webhook" }

// webhookSchemas are the data of each event (one per Go type) and each
// event's json-format body.
func webhookSchemas() map[string]any {
	out := map[string]any{}
	for t, ev := range webhookEvents {
		dataName := "Webhook" + ev.data.Name()
		if ev.data == reflect.TypeFor[testData]() {
			dataName = "WebhookTestData"
		}
		out[dataName] = goSchema(ev.data)
		out[webhookPayloadName(t)] = map[string]any{"type": "object", "additionalProperties": false,
			"required": []any{"type", "timestamp", "data"},
			"properties": map[string]any{
				"type":      map[string]any{"const": string(t)},
				"timestamp": map[string]any{"type": "string", "format": "date-time", "description": "when the event happened (RFC 3339)"},
				"data":      ref("schemas", dataName),
			}}
	}
	return out
}

// webhooks are the deliveries: one signed POST per event to a
// subscription's URL (docs/hooks.md), described as OpenAPI 3.1 webhooks.
func webhooks() map[string]any {
	signed := func(name, description string) map[string]any {
		return map[string]any{"name": name, "in": "header", "required": true, "schema": map[string]any{"type": "string"}, "description": description}
	}
	params := []any{
		signed("webhook-id", "the message id (msg:…): the same on every retry and duplicate; a receiver dedupes by it"),
		signed("webhook-timestamp", "the attempt's Unix time in seconds; refuse one more than a few minutes off"),
		signed("webhook-signature", "v1,<base64 HMAC-SHA256 of \"<webhook-id>.<webhook-timestamp>.<body>\">, keyed by the base64-decoded secret after whsec_ (Standard Webhooks)"),
	}
	out := map[string]any{}
	for t, ev := range webhookEvents {
		out[string(t)] = map[string]any{"post": map[string]any{
			"operationId": "webhook_" + string(t),
			"tags":        []any{tagWebhooks},
			"summary":     string(t),
			"description": "Sent when " + ev.when + ". A json-format subscription receives this body; a slack-format one receives a Slack Block Kit message instead (docs/hooks.md).",
			// The signature, not a bearer token, authenticates a delivery.
			"security":    []any{},
			"parameters":  params,
			"requestBody": map[string]any{"required": true, "content": jsonBody(ref("schemas", webhookPayloadName(t)))},
			"responses": map[string]any{
				"200": map[string]any{"description": "delivered: any 2xx answer delivers. 5xx, 408, 429, a timeout or a broken connection is retried with the same webhook-id for up to 24 h; any other status fails the delivery at once"},
			},
		}}
	}
	return out
}
