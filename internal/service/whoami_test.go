package service_test

import (
	"context"
	"slices"
	"testing"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/service"
)

// whoami reports the caller's own principal as its transport authenticated
// it: a token's id and one role, never a secret; the embedded owner holds
// every role but is no person until proven; an agent is never a person.
func TestWhoAmIReportsTheCallersOwnPrincipal(t *testing.T) {
	s := service.New(service.Deps{Project: "p1"})
	for _, c := range []struct {
		p      auth.Principal
		id     string
		roles  []string
		person bool
	}{
		{auth.Principal{Role: auth.RoleHarness, TokenID: "tok:1"}, "tok:1", []string{"harness"}, false},
		{auth.Principal{Role: auth.RoleApprover, TokenID: "tok:2"}, "tok:2", []string{"approver"}, true},
		{auth.UnprovenOwner("ada"), "ada", []string{"harness", "approver", "admin"}, false},
		{auth.Owner("person:ada"), "person:ada", []string{"harness", "approver", "admin"}, true},
		{auth.Harness("harness:bot"), "harness:bot", []string{"harness"}, false},
	} {
		got := s.Credentials.WhoAmI(service.WithPrincipal(context.Background(), c.p))
		if got.Principal != c.id || !slices.Equal(got.Roles, c.roles) || got.Person != c.person || got.Project != "p1" {
			t.Errorf("WhoAmI(%+v) = %+v", c.p, got)
		}
	}
}
