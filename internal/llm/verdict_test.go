package llm

import (
	"errors"
	"testing"
)

func TestWellFormedEvidenceAcceptsURIsAndCURIEs(t *testing.T) {
	for _, e := range []string{
		"https://go.dev/ref/spec#For_statements_with_range_clause",
		"http://localhost:8080/healthz",
		"file:///etc/hosts",
		"file:internal/store/sqlite.go#L40",
		"urn:isbn:0451450523",
		"doi:10.1145/3368089.3409748",
		"PMID:12345678",
		"GO:0008150",
		"claim:01HX05A9K8VP",
		"mailto:security@example.org",
		"  https://www.sqlite.org/wal.html  ",
	} {
		if !WellFormedEvidence(e) {
			t.Errorf("WellFormedEvidence(%q) = false, want true", e)
		}
	}
}

func TestWellFormedEvidenceRejectsProse(t *testing.T) {
	for _, e := range []string{
		"",
		"   ",
		"the SQLite documentation",
		"N/A",
		"see above",
		"https://",
		"http:///path-without-host",
		"file://",
		"https://exa mple.com",
		"Source: the spec",
		":no-prefix",
		"prefix:",
		"1abc:starts-with-digit",
	} {
		if WellFormedEvidence(e) {
			t.Errorf("WellFormedEvidence(%q) = true, want false", e)
		}
	}
}

func TestIsHedge(t *testing.T) {
	hedges := []string{
		"",
		"Not sure.",
		"I'm not sure; this claim might be wrong.",
		"Unclear. It may or may not be correct; hard to say without more context.",
		"Possibly incorrect, I cannot verify this.",
		"There is no evidence for this claim.",
		"I don't know",
		"idk",
		"Maybe?",
		"The claim is false.",
		"Doubtful — insufficient information to confirm.",
	}
	for _, r := range hedges {
		if !IsHedge(r) {
			t.Errorf("IsHedge(%q) = false, want true", r)
		}
	}
	specific := []string{
		"The claim says SQLite WAL mode allows concurrent writers, but WAL still serialises writers behind one write lock.",
		"Go 1.22 gave each loop iteration its own variable, so the race described cannot occur.",
		"Not sure the benchmark used -count=10; the README shows a single run.",
		"RFC 9110 section 10.2.3 allows an HTTP date in Retry-After.",
	}
	for _, r := range specific {
		if IsHedge(r) {
			t.Errorf("IsHedge(%q) = true, want false", r)
		}
	}
}

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
