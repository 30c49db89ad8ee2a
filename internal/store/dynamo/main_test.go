package dynamo_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/store/dynamo/capacity"
)

// The tests run against a real DynamoDB-compatible server: the one named
// by DONT_DYNAMO_ENDPOINT, AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL
// (LocalStack, or the stand-in started by localstack/standins.sh), or else
// the CI stand-in localstack/dynamostandin, which standin.Dynamo builds and
// starts on a free loopback port. They skip only if there is neither; with CI=true
// they fail instead.
var (
	db       *standin.Table
	endpoint string
	table    string
)

func TestMain(m *testing.M) {
	db = standin.OpenTable("dont-test", dynamo.CreateTable)
	endpoint, table = db.Endpoint, db.Name
	code := m.Run()
	db.Close()
	if kmsOnce.stop != nil {
		kmsOnce.stop()
	}
	os.Exit(code)
}

// needServer skips (or, in CI, fails) a test when there is no server.
func needServer(t testing.TB) { t.Helper(); db.Require(t) }

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

// newStore is a store of a fresh project on the shared test table.
func newStore(t testing.TB) *dynamo.Store {
	t.Helper()
	needServer(t)
	return dynamo.New(newClient(nil, nil), table, "test-"+randomName())
}
