package deployment_test

import (
	"context"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/store/dynamo/capacity"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// The backend's tests run against a real DynamoDB-compatible server, as
// internal/store/dynamo's do: the one named by DONT_DYNAMO_ENDPOINT,
// AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL, or else the CI stand-in
// localstack/dynamostandin, which standin.Dynamo builds and starts on a
// free loopback port. It is started by the first test that needs it, so
// that the package's other tests do not wait for it. They skip only if
// there is neither; with CI=true they fail instead.
var (
	ctx = context.Background()
	t0  = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

	serverOnce sync.Once
	db         *standin.Table
	endpoint   string
	table      string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if db != nil {
		db.Close()
	}
	if kmsStandin.stop != nil {
		kmsStandin.stop()
	}
	os.Exit(code)
}

// needServer starts the server and makes the test table on first use,
// and skips (or, in CI, fails) a test when there is no server.
func needServer(t testing.TB) {
	t.Helper()
	serverOnce.Do(func() {
		db = standin.OpenTable("dont-test", dynamo.CreateTable)
		endpoint, table = db.Endpoint, db.Name
	})
	db.Require(t)
}

func randomName() string { return standin.RandomName() }

// newClient is a DynamoDB client for the test server, through transport
// (nil: the default) and with counter's middleware (optional).
func newClient(transport http.RoundTripper, counter *capacity.Counter) *dynamodb.Client {
	if counter == nil {
		return standin.EnvClient(endpoint, transport)
	}
	return standin.EnvClient(endpoint, transport, counter.Register)
}

// newCounter is a capacity counter that reads the items writes replace
// through a client of its own.
func newCounter() *capacity.Counter { return capacity.NewCounter(newClient(nil, nil)) }
