package dynamo_test

import (
	"testing"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/storetest"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// The approval store's conformance suite against the DynamoDB server. The
// races spread their goroutines over separate clients of the same table
// and project, the way separate Lambda invocations reach it.
func TestApprovalConformance(t *testing.T) {
	storetest.RunApprovals(t, func(t *testing.T) (service.ApprovalStore, func() service.ApprovalStore) {
		s := newStore(t)
		return s, func() service.ApprovalStore { return dynamo.New(newClient(nil, nil), table, s.Project()) }
	})
}
