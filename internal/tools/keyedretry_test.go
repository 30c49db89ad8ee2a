package tools

import "testing"

// Every writing tool's keyed retry after a crash learns its outcome: its
// response commits with its write (CommitsKey), the service's own
// conditions hold it (Exclusive), it may simply run again (RerunSafe), or
// it resumes from what the cut run wrote (ResumesKey). None is left to
// answer idempotency-outcome-unknown (docs/proof.md, "Idempotency across
// crashes").
func TestNoKeyedToolAnswersAStaleKeyWithOutcomeUnknown(t *testing.T) {
	for _, tool := range All() {
		if tool.Annotations.ReadOnly || tool.CommitsKey() || tool.Exclusive || tool.RerunSafe() || tool.ResumesKey() {
			continue
		}
		t.Errorf("%s: a keyed retry after a crash would answer idempotency-outcome-unknown", tool.Name)
	}
}
