package dynamo_test

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

// The tests run against a real DynamoDB-compatible server: the one named
// by DONT_DYNAMO_ENDPOINT, AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL
// (LocalStack, or the stand-in started by localstack/standins.sh), or else
// the CI stand-in localstack/dynamostandin, which standin.Dynamo builds and
// starts on a free loopback port. They skip only if there is neither; with CI=true
// they fail instead.
var (
	endpoint string
	table    string
	noServer string // why there is no server, if there is none
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
		table = "dont-test-" + randomName()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := dynamo.CreateTable(ctx, newClient(nil, nil), table); err != nil {
			fmt.Fprintln(os.Stderr, "dynamo tests: create table:", err)
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

// needServer skips (or, in CI, fails) a test when there is no server.
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
