package standin

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
)

// Table is a fresh test table on a DynamoDB-compatible endpoint (Dynamo's),
// or why there is none. The DynamoDB test packages share it: the store's,
// the capacity counter's and the deployment's.
type Table struct {
	Endpoint string
	Name     string
	// Missing says why there is no server or table ("" when there is).
	Missing string
	stop    func()
}

// OpenTable finds or starts the endpoint and makes a table named
// prefix-<random> on it with create (dynamo.CreateTable).
func OpenTable(prefix string, create func(context.Context, *dynamodb.Client, string) error) *Table {
	endpoint, stop, err := Dynamo()
	if err != nil {
		return &Table{Missing: err.Error(), stop: func() {}}
	}
	tb := &Table{Endpoint: endpoint, stop: stop}
	name := prefix + "-" + RandomName()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := create(ctx, EnvClient(endpoint, nil), name); err != nil {
		tb.Missing = fmt.Sprintf("create table %s: %v", name, err)
		return tb
	}
	tb.Name = name
	return tb
}

// Require skips t when there is no table, or fails it under CI=true: a
// skipped test never passes in CI.
func (tb *Table) Require(t testing.TB) {
	t.Helper()
	if tb.Missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and no DynamoDB-compatible server: %s", tb.Missing)
	}
	t.Skipf("no DynamoDB-compatible server (set DONT_DYNAMO_ENDPOINT or make localstack/dynamostandin buildable): %s", tb.Missing)
}

// Close deletes the table and stops the stand-in it started.
func (tb *Table) Close() {
	if tb.Name != "" {
		EnvClient(tb.Endpoint, nil).DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(tb.Name)})
	}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	tb.stop()
}

// RandomName is 12 random hex digits, for table and project names.
func RandomName() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
