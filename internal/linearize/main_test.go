package linearize_test

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/dont-cli/dont/internal/standin"
	"go.uber.org/goleak"
)

var (
	standinOnce     sync.Once
	standinEndpoint string
	standinStop     = func() {}
	standinErr      error
)

// dynamoEndpoint starts the DynamoDB stand-in once per test binary.
func dynamoEndpoint(t *testing.T) string {
	standinOnce.Do(func() { standinEndpoint, standinStop, standinErr = standin.Dynamo() })
	if standinErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no DynamoDB stand-in: %v", standinErr)
		}
		t.Skipf("no DynamoDB-compatible endpoint: %v", standinErr)
	}
	return standinEndpoint
}

// Every test in this package must leave no goroutine behind; the stand-in
// process is stopped first, and the default transport's idle connections
// closed (the strictness check's client keeps them open to an endpoint
// the environment names, which outlives the test binary).
func TestMain(m *testing.M) {
	code := m.Run()
	standinStop()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
