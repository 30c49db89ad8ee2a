package llm

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/dont-cli/dont/internal/ledger"
)

// ValidateVerdict checks that v is usable as a terminal action: a dismiss
// with at least one well-formed URI or CURIE as evidence, or a trust with a
// specific, non-hedge reason: the ledger's rules (internal/ledger/doubt.go),
// the same that judge a person's. It returns nil or an *UnusableError matching
// ErrUnusableVerdict.
func ValidateVerdict(v Verdict) error {
	if p := problem(v); p != "" {
		return &UnusableError{Op: opJudge, Problem: p}
	}
	return nil
}

func problem(v Verdict) string {
	switch v.Action {
	case ActionDismiss:
		if len(v.Evidence) == 0 {
			return "dismiss without evidence"
		}
		for _, e := range v.Evidence {
			if !ledger.WellFormedEvidence(strings.TrimSpace(e)) {
				return "dismiss evidence is not a URI or CURIE: " + strings.TrimSpace(snippet(e))
			}
		}
		return ""
	case ActionTrust:
		if strings.TrimSpace(v.Reason) == "" {
			return "trust without a reason"
		}
		if ledger.IsHedge(v.Reason) {
			return "trust reason is only a hedge: " + snippet(v.Reason)
		}
		return ""
	case "":
		return "no action"
	default:
		return "unknown action " + snippet(v.Action)
	}
}

// normalise trims the fields, lower-cases the action and drops empty and
// repeated evidence, so that ValidateVerdict judges what a caller would
// record.
func normalise(v Verdict) Verdict {
	out := Verdict{
		Action: strings.ToLower(strings.TrimSpace(v.Action)),
		Reason: strings.TrimSpace(v.Reason),
	}
	seen := map[string]bool{}
	for _, e := range v.Evidence {
		e = strings.TrimSpace(e)
		if e == "" || seen[e] {
			continue
		}
		seen[e] = true
		out.Evidence = append(out.Evidence, e)
	}
	if out.Action == ActionTrust && len(out.Evidence) == 0 {
		out.Evidence = nil
	}
	return out
}

// parseVerdict reads a verdict object (the model's JSON output or tool input),
// normalises and validates it. Every failure is an *UnusableError for
// provider.
func parseVerdict(provider string, raw []byte) (Verdict, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return Verdict{}, unusable(provider, opJudge, "empty output")
	}
	var wire struct {
		Action   *string  `json:"action"`
		Evidence []string `json:"evidence"`
		Reason   string   `json:"reason"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&wire); err != nil {
		return Verdict{}, unusable(provider, opJudge, "output is not a verdict object: %s", snippet(string(raw)))
	}
	if dec.More() {
		return Verdict{}, unusable(provider, opJudge, "trailing data after the verdict object")
	}
	if wire.Action == nil {
		return Verdict{}, unusable(provider, opJudge, "verdict has no action")
	}
	v := normalise(Verdict{Action: *wire.Action, Evidence: wire.Evidence, Reason: wire.Reason})
	if p := problem(v); p != "" {
		return Verdict{}, unusable(provider, opJudge, "%s", p)
	}
	return v, nil
}
