package deployment_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/dont-cli/dont/internal/store/dynamo/capacity"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
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
	endpoint   string
	table      string
	noServer   string // why there is no server, if there is none
	stop       = func() {}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if table != "" {
		newClient(nil, nil).DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	stop()
	os.Exit(code)
}

// needServer starts the server and makes the test table on first use,
// and skips (or, in CI, fails) a test when there is no server.
func needServer(t testing.TB) {
	t.Helper()
	serverOnce.Do(func() {
		var err error
		var halt func()
		if endpoint, halt, err = standin.Dynamo(); err != nil {
			noServer = err.Error()
			return
		}
		stop = halt
		name := "dont-test-" + randomName()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := dynamo.CreateTable(ctx, newClient(nil, nil), name); err != nil {
			noServer = fmt.Sprintf("create table: %v", err)
			return
		}
		table = name
	})
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
