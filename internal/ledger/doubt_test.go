package ledger_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ledger"
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
	} {
		if !ledger.WellFormedEvidence(e) {
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
		if ledger.WellFormedEvidence(e) {
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
		if !ledger.IsHedge(r) {
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
		if ledger.IsHedge(r) {
			t.Errorf("IsHedge(%q) = true, want false", r)
		}
	}
}

// The rules of doubt once disagreed by author: a person's "insufficient
// evidence" was a reason and a provider's was not; "ftp://" and "file:///"
// were evidence from a person and not from a provider. One checker now
// judges both: each row is refused (or accepted) from a person at the
// ledger and from a provider's verdict alike.
func TestOneRuleJudgesEveryAuthor(t *testing.T) {
	reasons := []struct {
		reason string
		hedge  bool
	}{
		{"insufficient evidence", true},
		{"the source is unclear", true},
		{"I'm not sure", true},
		{"seems off to me", true},
		{"just a hunch", true},
		{"WAL mode still serialises writers behind one lock", false},
		{"Go 1.22 gave each loop iteration its own variable", false},
	}
	for _, r := range reasons {
		err := ledger.CheckReason("claim:1", r.reason)
		if got := errs.Is(err, errs.HedgeReason); got != r.hedge || ledger.IsHedge(r.reason) != r.hedge {
			t.Errorf("reason %q: refused as a hedge %v (IsHedge %v), want %v", r.reason, got, ledger.IsHedge(r.reason), r.hedge)
		}
	}
	evidence := []struct {
		ev string
		ok bool
	}{
		{"ftp://", false},
		{"file:///", false},
		{"https://", false},
		{"https:no-host", false},
		{"http:///path-without-host", false},
		{"doc:\x07bell", false},
		{"doc:a b", false},
		{"file:///etc/hosts", true},
		{"ftp://ftp.example.org/pub/spec.txt", true},
		{"_:blank", true},
		{"PMID:12345678", true},
		{"https://go.dev/ref/spec", true},
	}
	for _, e := range evidence {
		err := ledger.CheckEvidence("claim:1", []string{e.ev})
		if (err == nil) != e.ok || ledger.WellFormedEvidence(e.ev) != e.ok {
			t.Errorf("evidence %q: CheckEvidence %v, WellFormedEvidence %v; want accepted %v", e.ev, err, ledger.WellFormedEvidence(e.ev), e.ok)
		}
	}
}
