package linearize_test

import (
	"context"
	"testing"

	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// The strict CI run (.ci/run) runs the dynamo backends against a stand-in
// with its strict modes on (index lag, injected TransactionConflict and
// throttling) and sets DONT_STANDIN_EXPECT_STRICT=1: then this checks that
// the stand-in those backends used is strict.
func TestTheStandinIsStrictWhenTheStrictRunAsks(t *testing.T) {
	if !standin.ExpectStrict() {
		t.Skip("DONT_STANDIN_EXPECT_STRICT is not set (only the strict CI run sets it)")
	}
	if err := standin.CheckStrict(context.Background(), dynamoEndpoint(t), dynamo.CreateTable); err != nil {
		t.Fatal(err)
	}
}
