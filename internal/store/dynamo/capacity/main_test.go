package capacity_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
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
	endpoint string
	table    string
	noServer string
)

func TestMain(m *testing.M) {
	stop := func() {}
	code := func() int {
		var err error
		endpoint, stop, err = standin.Dynamo()
		if err != nil {
			noServer = err.Error()
			return m.Run()
		}
		table = "dont-capacity-" + randomName()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := dynamo.CreateTable(ctx, newClient(nil, nil), table); err != nil {
			fmt.Fprintln(os.Stderr, "capacity tests: create table:", err)
			return 1
		}
		defer newClient(nil, nil).DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		return m.Run()
	}()
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	stop()
	os.Exit(code)
}

func needServer(t testing.TB) {
	t.Helper()
	if noServer == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and no DynamoDB-compatible server: %s", noServer)
	}
	t.Skipf("no DynamoDB-compatible server (set DONT_DYNAMO_ENDPOINT or make localstack/dynamostandin buildable): %s", noServer)
}

func randomName() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

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
