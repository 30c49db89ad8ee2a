package project_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/project"
)

// doctor's store-not-private refusal tells the owner to run MakePrivate:
// the presentation table spells the same command.
func TestTheTableSpellsMakePrivate(t *testing.T) {
	c, ok := present.Of("store-not-private")
	if !ok || len(c.Remediation) != 1 || c.Remediation[0].Command != project.MakePrivate {
		t.Fatalf("store-not-private remediation %+v, want %q", c.Remediation, project.MakePrivate)
	}
}
