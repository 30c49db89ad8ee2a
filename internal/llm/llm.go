// Package llm is dont's direct-mode provider layer: it sends the spawn prompt
// of `assume`/`overlook` to a configured LLM and returns a structured verdict,
// and asks for the candidate answers of `guess`.
//
// Three adapters sit behind one small interface: an OpenAI-compatible
// chat-completions client (OpenAI, vLLM, Ollama, llama.cpp server), Anthropic
// Messages, and Amazon Bedrock Converse (JSON over net/http, SigV4-signed by
// the AWS SDK's signer; no SDK service client). Every adapter retries
// 429 and 5xx answers with exponential backoff and jitter, honours Retry-After,
// bounds each request with a timeout and stops waiting as soon as the caller's
// context is cancelled.
//
// Failures come in three families, tested with errors.Is / errors.As and never
// by text:
//
//   - ErrConfig (*ConfigError): New was given missing or invalid settings;
//   - ErrProvider (*ProviderError): no usable answer came back from the
//     provider (HTTP status, network failure, timeout, cancellation);
//     ErrRateLimited and ErrTimeout narrow it down;
//   - ErrUnusableVerdict / ErrUnusableCandidates (*UnusableError): the
//     provider answered, but the answer cannot be used (malformed output, no
//     tool call, a dismiss without well-formed evidence, a trust whose reason
//     is only a hedge).
//
// API keys never appear in errors, logs or formatted values.
package llm

import (
	"context"

	"github.com/dont-cli/dont/internal/spawn"
)

// Verdict is the terminal action of a verification: the spawn rules' own
// type (spawn.Verdict), which the service's Reasoner port returns.
type Verdict = spawn.Verdict

// Verdict actions.
const (
	ActionDismiss = spawn.ActionDismiss
	ActionTrust   = spawn.ActionTrust
)

// Provider is one configured LLM endpoint. It satisfies the service's
// Reasoner port (direct mode).
type Provider interface {
	// Name is the configured provider name ("openai", "ollama", "anthropic",
	// "bedrock", ...), for events and diagnostics.
	Name() string
	// Judge sends the verification prompt and returns a validated verdict.
	// An answer that yields no valid verdict is an *UnusableError matching
	// ErrUnusableVerdict.
	Judge(ctx context.Context, prompt string) (Verdict, error)
	// Candidates asks for n candidate answers to prompt at the given
	// temperature, and returns exactly n non-empty answers or an error.
	Candidates(ctx context.Context, prompt string, n int, temperature float64) ([]string, error)
}

// JudgeInstructions is the system prompt every adapter sends with Judge. The
// user prompt is the one the spawn request carries; these instructions map its
// two terminal commands onto the verdict the provider must return.
const JudgeInstructions = `You are a clean-context verifier for the dont claim ledger. Work only from the task you are given. You cannot run commands: instead of running "dont dismiss" or "dont trust", report your single terminal action as a verdict.
- action "dismiss": you verified the claim. List the evidence as URIs or CURIEs (for example https://go.dev/ref/spec#For_range, doi:10.1145/3368089, file:internal/store/sqlite.go#L40, PMID:12345678). Evidence is required.
- action "trust": you doubt the claim. Give a specific reason that names what is wrong or what could not be checked, and why. Hedges alone ("not sure", "might be wrong") are rejected.
Leave evidence empty for trust, and reason empty or short for dismiss.`

// CandidateInstructions is the system prompt every adapter sends with
// Candidates, so that independent answers can be tallied for agreement.
const CandidateInstructions = `Answer the question independently and concisely. Reply with the answer only: no preamble, no restating the question, no alternatives.`

// verdictToolName names the forced tool (Anthropic, Bedrock) and the JSON
// schema (OpenAI) that carry a verdict.
const verdictToolName = "verdict"

const verdictToolDescription = "Report the terminal action of this verification: dismiss with evidence, or trust with a specific reason."

// verdictSchema is the JSON schema of a verdict. Every property is required and
// no other property is allowed, as OpenAI's strict structured outputs demand.
func verdictSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action": map[string]any{
				"type":        "string",
				"enum":        []any{ActionDismiss, ActionTrust},
				"description": "dismiss: the claim is verified; trust: the claim is doubted.",
			},
			"evidence": map[string]any{
				"type":        "array",
				"items":       map[string]any{"type": "string"},
				"description": "For dismiss: URIs or CURIEs that support the claim. Empty for trust.",
			},
			"reason": map[string]any{
				"type":        "string",
				"description": "For trust: the specific reason the claim is doubted. May be empty for dismiss.",
			},
		},
		"required":             []any{"action", "evidence", "reason"},
		"additionalProperties": false,
	}
}
