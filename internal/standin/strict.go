package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Strict are the strict modes of localstack/dynamostandin for one table
// (localstack/README.md): global index reads lag writes by GSILagReads
// index queries (and GSILag, a Go duration), and a fraction of requests
// is refused with an injected TransactionConflict or throttling error.
type Strict struct {
	GSILagReads  int     `json:"GSILagReads,omitempty"`
	GSILag       string  `json:"GSILag,omitempty"`
	ConflictRate float64 `json:"ConflictRate,omitempty"`
	ThrottleRate float64 `json:"ThrottleRate,omitempty"`
}

// ErrNotTheStandin is Configure's error when endpoint is not
// localstack/dynamostandin (LocalStack, DynamoDB): it has no strict modes.
var ErrNotTheStandin = errors.New("the endpoint is not localstack/dynamostandin: it has no strict modes to configure")

// Configure replaces the strict modes of table on the stand-in at endpoint.
func Configure(ctx context.Context, endpoint, table string, m Strict) error {
	body, _ := json.Marshal(struct {
		TableName string
		Strict
	}{table, m})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-Amz-Target", "DontStandin.Configure")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		if strings.Contains(string(out), "UnknownOperation") || resp.StatusCode == http.StatusNotFound {
			return ErrNotTheStandin
		}
		return fmt.Errorf("configure the stand-in's strict modes: %s: %s", resp.Status, out)
	}
	return nil
}

// ExpectStrict reports whether DONT_STANDIN_EXPECT_STRICT asks the tests
// to check that the stand-in they use has strict modes on for every
// table (the strict CI run, .ci/run).
func ExpectStrict() bool { return os.Getenv("DONT_STANDIN_EXPECT_STRICT") == "1" }

// maxStrictWrites bounds CheckStrict's transactions.
const maxStrictWrites = 2000

// CheckStrict checks, on a fresh table of create's making, that the
// stand-in at endpoint lags index reads and injects throttling and
// transaction conflicts: by default (m nil), or once the table is
// configured with m. An error says which is off.
func CheckStrict(ctx context.Context, endpoint string, create func(context.Context, *dynamodb.Client, string) error, m *Strict) error {
	ddb := Client(endpoint, nil, func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	table := "dont-strict-" + RandomName()
	var err error
	for range 20 { // CreateTable itself is not throttled, but be patient
		if err = create(ctx, Client(endpoint, nil), table); err == nil {
			break
		}
	}
	if err != nil {
		return err
	}
	defer ddb.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	if m != nil {
		if err := Configure(ctx, endpoint, table, *m); err != nil {
			return err
		}
	}
	var throttled, conflicts int
	retry := func(call func() error) error {
		for {
			err := call()
			var te *types.ThrottlingException
			var pe *types.ProvisionedThroughputExceededException
			var tce *types.TransactionCanceledException
			switch {
			case errors.As(err, &te), errors.As(err, &pe):
				throttled++
			case errors.As(err, &tce):
				for _, r := range tce.CancellationReasons {
					switch aws.ToString(r.Code) {
					case "TransactionConflict":
						conflicts++
					case "ThrottlingError":
						throttled++
					}
				}
			default:
				return err
			}
		}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	// At least 200 transactions, and on until both a throttle and a
	// conflict have been seen: at CI's rates (2% and 5%) 200 alone miss a
	// throttle about once in 60 runs; 2,000 miss one about once in 10^17.
	written := 0
	for ; written < maxStrictWrites && (written < 200 || throttled == 0 || conflicts == 0); written++ {
		it := map[string]types.AttributeValue{"pk": s("strict"), "sk": s(fmt.Sprint(written)), "gsi1pk": s("strict"), "expires_at": s(fmt.Sprintf("%04d", written))}
		if err := retry(func() error {
			_, err := ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(table), Item: it}}}})
			return err
		}); err != nil {
			return err
		}
	}
	var seen int
	if err := retry(func() error {
		out, err := ddb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("pending_expiry"),
			KeyConditionExpression: aws.String("gsi1pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("strict")}})
		if err == nil {
			seen = len(out.Items)
		}
		return err
	}); err != nil {
		return err
	}
	var off []string
	if seen == written {
		off = append(off, "index reads see every write at once (no GSI lag)")
	}
	if throttled == 0 {
		off = append(off, fmt.Sprintf("%d transactions and a query were never throttled", written))
	}
	if conflicts == 0 {
		off = append(off, fmt.Sprintf("%d transactions never met a TransactionConflict", written))
	}
	if len(off) > 0 {
		return errors.New("the DynamoDB stand-in is not strict: " + strings.Join(off, "; "))
	}
	return nil
}
