package llm

import (
	"errors"
	"testing"
)

func TestVerdictValidate(t *testing.T) {
	valid := []Verdict{
		{Action: ActionDismiss, Evidence: []string{"https://www.sqlite.org/wal.html"}},
		{Action: ActionDismiss, Evidence: []string{"doi:10.14778/3554821.3554842", "PMID:12345678"}, Reason: "Both sources agree."},
		{Action: ActionTrust, Reason: "The cited benchmark ran on Go 1.20, before the change the claim depends on."},
	}
	for _, v := range valid {
		if err := ValidateVerdict(v); err != nil {
			t.Errorf("ValidateVerdict(%+v) = %v, want nil", v, err)
		}
	}
	invalid := []Verdict{
		{},
		{Action: "approve", Evidence: []string{"https://example.org"}},
		{Action: ActionDismiss},
		{Action: ActionDismiss, Evidence: []string{"https://example.org/a", "the docs"}},
		{Action: ActionTrust},
		{Action: ActionTrust, Reason: "   "},
		{Action: ActionTrust, Reason: "Not sure, might be wrong."},
	}
	for _, v := range invalid {
		err := ValidateVerdict(v)
		if !errors.Is(err, ErrUnusableVerdict) {
			t.Errorf("ValidateVerdict(%+v) = %v, want ErrUnusableVerdict", v, err)
		}
		if errors.Is(err, ErrProvider) || errors.Is(err, ErrUnusableCandidates) {
			t.Errorf("ValidateVerdict(%+v) = %v also matches another family", v, err)
		}
		var ue *UnusableError
		if !errors.As(err, &ue) || ue.Problem == "" {
			t.Errorf("ValidateVerdict(%+v) = %#v, want an *UnusableError with a problem", v, err)
		}
	}
}

func TestParseVerdictNormalisesAndRejectsMalformedOutput(t *testing.T) {
	v, err := parseVerdict("test", []byte(` {"action":" Dismiss ","evidence":[" https://go.dev/doc/go1.22 ","","https://go.dev/doc/go1.22"],"reason":""} `))
	if err != nil {
		t.Fatal(err)
	}
	if v.Action != ActionDismiss || len(v.Evidence) != 1 || v.Evidence[0] != "https://go.dev/doc/go1.22" {
		t.Errorf("parseVerdict normalised to %+v", v)
	}
	for _, raw := range []string{
		``,
		`Based on the evidence, I would dismiss this claim.`,
		`{"evidence":["https://go.dev"],"reason":""}`,
		`{"action":"dismiss","evidence":["https://go.dev"],"reason":""} {"action":"trust"}`,
		`{"action":"dismiss","evidence":"https://go.dev","reason":""}`,
		`["dismiss"]`,
	} {
		_, err := parseVerdict("test", []byte(raw))
		if !errors.Is(err, ErrUnusableVerdict) {
			t.Errorf("parseVerdict(%q) = %v, want ErrUnusableVerdict", raw, err)
		}
	}
}
