package capacity_test

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/store/dynamo/capacity"
)

// The tests run against a DynamoDB-compatible server as the store's do
// (internal/store/dynamo, main_test.go): the one the environment names,
// else the CI stand-in. They skip only if there is neither; with CI=true
// they fail instead.
var (
	ctx      = context.Background()
	db       *standin.Table
	endpoint string
	table    string
)

func TestMain(m *testing.M) {
	db = standin.OpenTable("dont-capacity", dynamo.CreateTable)
	endpoint, table = db.Endpoint, db.Name
	code := m.Run()
	db.Close()
	os.Exit(code)
}

func needServer(t testing.TB) { t.Helper(); db.Require(t) }

func randomName() string { return standin.RandomName() }

// newClient is a client of the test server, through transport (nil: the
// default) and with counter's middleware (optional).
func newClient(transport http.RoundTripper, counter *capacity.Counter) *dynamodb.Client {
	if counter == nil {
		return standin.EnvClient(endpoint, transport)
	}
	return standin.EnvClient(endpoint, transport, counter.Register)
}

// counted is a client with a fresh counter on it; the counter reads
// through a client of its own.
func counted(transport http.RoundTripper) (*dynamodb.Client, *capacity.Counter) {
	c := capacity.NewCounter(newClient(nil, nil))
	return newClient(transport, c), c
}
