package linearize_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// The strict CI run (.ci/run) runs the dynamo backends against a stand-in
// with its strict modes on for every table (index lag, injected
// TransactionConflict and throttling) and sets
// DONT_STANDIN_EXPECT_STRICT=1: then this checks that the stand-in those
// backends used is strict. Otherwise, that one table configured strict is.
func TestTheStandinIsStrictWhereAsked(t *testing.T) {
	var m *standin.Strict
	if !standin.ExpectStrict() {
		m = &standin.Strict{GSILagReads: 1, ConflictRate: 0.2, ThrottleRate: 0.2}
	}
	err := standin.CheckStrict(context.Background(), dynamoEndpoint(t), dynamo.CreateTable, m)
	if errors.Is(err, standin.ErrNotTheStandin) {
		t.Skipf("%v; DynamoDB's own index lag, conflicts and throttling cannot be forced", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}
