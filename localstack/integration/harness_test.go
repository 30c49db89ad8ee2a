// Package integration_test is dont's AWS integration suite: the api and
// sweeper functions run as their bootstrap binaries under the Lambda
// Runtime Interface Emulator, over real DynamoDB and SQS wire protocols
// (LocalStack, or the local stand-ins). localstack/integration.sh starts
// everything and runs it; without DONT_INTEGRATION=1 every test skips, and
// with it a missing piece fails the test instead.
package integration_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	dontenvelope "github.com/dont-cli/dont/internal/envelope"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/kms"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// suite is what localstack/integration.sh set up.
type suite struct {
	ddb      *dynamodb.Client
	sqs      *awssqs.Client
	table    string
	queueURL string
	// sweepQueueURL is the sweep work queue: the sweeper's scheduled event
	// sends one "sweep project p" message per project there, and the suite
	// delivers them back to the sweeper as the event source mapping would.
	sweepQueueURL string
	region        string
	short         time.Duration
	sealer        kms.Sealer
	// api issues spawns that expire in 24h, apiShort in s.short; operator
	// takes the operator's direct invokes (a project's first token);
	// apiPasskey is api approving danger-full-access only with a passkey.
	api, apiShort, apiPasskey, sweeper, operator *function
	// slackProject is the project api's Slack app answers for
	// (DONT_SLACK_PROJECT), slackSecret its signing secret.
	slackProject, slackSecret string
}

var (
	setupOnce sync.Once
	theSuite  *suite
	setupErr  error
)

func setup(t *testing.T) *suite {
	t.Helper()
	if os.Getenv("DONT_INTEGRATION") != "1" {
		t.Skip("the AWS integration suite runs under bash localstack/integration.sh (DONT_INTEGRATION=1)")
	}
	setupOnce.Do(func() { theSuite, setupErr = newSuite() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return theSuite
}

func newSuite() (*suite, error) {
	need := func(name string) (string, error) {
		v := os.Getenv(name)
		if v == "" {
			return "", fmt.Errorf("%s is not set: run the suite with bash localstack/integration.sh", name)
		}
		return v, nil
	}
	s := &suite{}
	vals := map[string]*string{"DONT_TABLE": &s.table, "DONT_TIMEOUT_QUEUE_URL": &s.queueURL, "DONT_IT_SWEEP_QUEUE_URL": &s.sweepQueueURL,
		"DONT_IT_SLACK_PROJECT": &s.slackProject, "DONT_IT_SLACK_SIGNING_SECRET": &s.slackSecret}
	urls := map[string]**function{"DONT_IT_API": &s.api, "DONT_IT_API_SHORT": &s.apiShort, "DONT_IT_API_PASSKEY": &s.apiPasskey,
		"DONT_IT_SWEEPER": &s.sweeper, "DONT_IT_OPERATOR": &s.operator}
	for name, p := range vals {
		v, err := need(name)
		if err != nil {
			return nil, err
		}
		*p = v
	}
	for name, p := range urls {
		v, err := need(name)
		if err != nil {
			return nil, err
		}
		*p = &function{name: strings.ToLower(strings.TrimPrefix(name, "DONT_IT_")), url: v, http: &http.Client{Timeout: 90 * time.Second}}
	}
	short, err := need("DONT_IT_SHORT_TIMEOUT")
	if err != nil {
		return nil, err
	}
	if s.short, err = time.ParseDuration(short); err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		return nil, err
	}
	s.region = cfg.Region
	s.ddb, s.sqs = dynamodb.NewFromConfig(cfg), awssqs.NewFromConfig(cfg)
	// The functions seal project secrets with this key; the suite's own
	// store reads them with it too.
	key, err := need("DONT_SECRETS_KEY")
	if err != nil {
		return nil, err
	}
	s.sealer = kms.Sealer{Client: awskms.NewFromConfig(cfg), KeyID: key}
	return s, nil
}

// function is one Lambda function under its own emulator instance. The
// emulator serves one invoke at a time: invoke serialises.
type function struct {
	name string
	url  string
	http *http.Client
	mu   sync.Mutex
}

// invoke sends one event and decodes the function's answer into out. A
// function error (the handler returned an error) is an error here.
func (f *function) invoke(ctx context.Context, in, out any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return fmt.Errorf("invoke %s: %w", f.name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("invoke %s: HTTP %d: %s", f.name, resp.StatusCode, raw)
	}
	var fnErr struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	if json.Unmarshal(raw, &fnErr) == nil && fnErr.Type != "" {
		return fmt.Errorf("%s returned an error: %s: %s", f.name, fnErr.Type, fnErr.Message)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

var ctx = context.Background()

// ---- projects, tokens and the HTTP API

// project is one tenant of the table, with a harness token made through
// the DynamoDB store directly (as an operator's bootstrap would).
type project struct {
	s     *suite
	t     *testing.T
	name  string
	store *dynamo.Store
	token string
}

func (s *suite) newProject(t *testing.T) *project {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	return s.newProjectNamed(t, "it-"+hex.EncodeToString(b))
}

// newProjectNamed is newProject of a given name (the Slack app's).
func (s *suite) newProjectNamed(t *testing.T, name string) *project {
	t.Helper()
	st := dynamo.New(s.ddb, s.table, name)
	st.SetSealer(s.sealer)
	// The project's first token, as an operator makes it: a direct invoke
	// of the operator function (aws lambda invoke).
	var env map[string]any
	op := map[string]any{"dont_operator": map[string]any{"create_token": map[string]any{"project": name, "role": "harness", "name": "integration"}}}
	if err := s.operator.invoke(ctx, op, &env); err != nil {
		t.Fatal(err)
	}
	data, _ := env["data"].(map[string]any)
	token, _ := data["token"].(string)
	if env["ok"] != true || data["role"] != "harness" || token == "" {
		t.Fatalf("operator create_token: %v", env)
	}
	return &project{s: s, t: t, name: name, store: st, token: token}
}

// envelope is a decoded response.
type envelope struct {
	Status  int
	Headers map[string]string
	Body    map[string]any
	Raw     string
}

func (e envelope) data() map[string]any { d, _ := e.Body["data"].(map[string]any); return d }
func (e envelope) str(k string) string  { s, _ := e.data()[k].(string); return s }
func (e envelope) code() string         { return e.str("code") }
func (e envelope) warnings() []string {
	var out []string
	ws, _ := e.Body["warnings"].([]any)
	for _, w := range ws {
		m, _ := w.(map[string]any)
		c, _ := m["code"].(string)
		out = append(out, c)
	}
	return out
}

var eventSeq sync.Mutex
var eventN int

// httpEvent is what API Gateway's HTTP API sends the function for one
// request: payload format 2.0, the $default route.
func httpEvent(method, path, token string, body []byte, headers map[string]string) events.APIGatewayV2HTTPRequest {
	eventSeq.Lock()
	eventN++
	n := eventN
	eventSeq.Unlock()
	h := map[string]string{"content-type": "application/json", "user-agent": "dont-integration", "host": "api.example.test"}
	if token != "" {
		h["authorization"] = "Bearer " + token
	}
	for k, v := range headers {
		h[strings.ToLower(k)] = v
	}
	now := time.Now()
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, Headers: h, Body: string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey: "$default", Stage: "$default", AccountID: "000000000000", APIID: "dontit",
			DomainName: "api.example.test", DomainPrefix: "api",
			RequestID: fmt.Sprintf("it%08d", n), Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, Protocol: "HTTP/1.1", SourceIP: "192.0.2.10", UserAgent: "dont-integration"},
		},
	}
}

// request sends one HTTP API event through fn and decodes the envelope.
func (s *suite) request(t *testing.T, fn *function, method, path, token string, body []byte, headers map[string]string) envelope {
	t.Helper()
	var resp events.APIGatewayV2HTTPResponse
	if err := fn.invoke(ctx, httpEvent(method, path, token, body, headers), &resp); err != nil {
		t.Fatal(err)
	}
	raw := resp.Body
	if resp.IsBase64Encoded {
		t.Fatalf("%s %s: a JSON API answered a base64 body", method, path)
	}
	e := envelope{Status: resp.StatusCode, Headers: resp.Headers, Raw: raw}
	if err := json.Unmarshal([]byte(raw), &e.Body); err != nil {
		t.Fatalf("%s %s: %d, body is not an envelope: %q", method, path, resp.StatusCode, raw)
	}
	return e
}

// call runs one tool with the project's harness token (or token, if given).
func (p *project) call(fn *function, tool string, args map[string]any, token ...string) envelope {
	p.t.Helper()
	tok := p.token
	if len(token) > 0 {
		tok = token[0]
	}
	if args == nil { // "args" is an object: null is refused
		args = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"args": args})
	return p.s.request(p.t, fn, http.MethodPost, "/v1/tools/"+tool, tok, body, nil)
}

// ok is call that must succeed.
func (p *project) ok(fn *function, tool string, args map[string]any, token ...string) envelope {
	p.t.Helper()
	e := p.call(fn, tool, args, token...)
	if e.Status != http.StatusOK || e.Body["ok"] != true {
		p.t.Fatalf("%s %v: %d %s", tool, args, e.Status, e.Raw)
	}
	return e
}

// verifiedClaim concludes a claim and verifies it, so that a timeout has
// something to restore.
func (p *project) verifiedClaim(fn *function) string {
	p.t.Helper()
	id := p.ok(fn, "conclude", map[string]any{"statement": "water boils at 100 C at sea level"}).str("id")
	p.ok(fn, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/its-90"}})
	return id
}

// spawnRequest is the part of a spawn_request the suite reads.
type spawnRequest struct {
	RequestID string    `json:"request_id"`
	EntityID  string    `json:"entity_id"`
	ExpiresAt time.Time `json:"expires_at"`
	Callback  struct {
		Token string `json:"token"`
	} `json:"callback"`
	// Issued is the envelope that issued it, as the API answered: the
	// only read that carries its callback token.
	Issued string `json:"-"`
}

func (p *project) assume(fn *function, entityID string) spawnRequest {
	p.t.Helper()
	e := p.ok(fn, "assume", map[string]any{"id": entityID})
	if e.Body["envelope_kind"] != dontenvelope.KindSpawnRequest {
		p.t.Fatalf("assume answered %v", e.Body["envelope_kind"])
	}
	b, _ := json.Marshal(e.data())
	var req spawnRequest
	if err := json.Unmarshal(b, &req); err != nil || req.RequestID == "" {
		p.t.Fatalf("spawn request %s: %v", b, err)
	}
	req.Issued = e.Raw
	return req
}

// ---- what DynamoDB holds

func (p *project) entity(id string) ledger.Entity {
	p.t.Helper()
	e, err := p.store.GetEntity(ctx, id)
	if err != nil {
		p.t.Fatal(err)
	}
	return e
}

func (p *project) spawn(id string) spawn.Spawn {
	p.t.Helper()
	sp, err := p.store.GetSpawn(ctx, id)
	if err != nil {
		p.t.Fatal(err)
	}
	return sp
}

func (p *project) events(entityID string, kind ledger.EventKind) []ledger.Event {
	p.t.Helper()
	evs, err := p.store.Events(ctx, entityID)
	if err != nil {
		p.t.Fatal(err)
	}
	var out []ledger.Event
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// ---- the queue, as Lambda's SQS poller sees it

// receive long-polls the queue for up to wait and returns what came due.
func (s *suite) receive(t *testing.T, wait time.Duration) []sqstypes.Message {
	t.Helper()
	msgs, err := s.receiveErr(wait)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func (s *suite) receiveErr(wait time.Duration) ([]sqstypes.Message, error) {
	return s.receiveFrom(s.queueURL, wait)
}

// receiveFrom long-polls the queue at url, ten messages at most.
func (s *suite) receiveFrom(url string, wait time.Duration) ([]sqstypes.Message, error) {
	out, err := s.sqs.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         10,
		WaitTimeSeconds:             int32(wait / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// sqsEvent is the event Lambda's poller builds from messages received
// from the timeout queue.
func (s *suite) sqsEvent(msgs []sqstypes.Message) events.SQSEvent {
	return s.sqsEventOf(s.queueURL, msgs)
}

// sqsEventOf is the event Lambda's poller builds from messages received
// from the queue at url.
func (s *suite) sqsEventOf(url string, msgs []sqstypes.Message) events.SQSEvent {
	name := url[strings.LastIndex(url, "/")+1:]
	var ev events.SQSEvent
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes, MessageAttributes: map[string]events.SQSMessageAttribute{},
			EventSource: "aws:sqs", EventSourceARN: "arn:aws:sqs:" + s.region + ":000000000000:" + name, AWSRegion: s.region,
		})
	}
	return ev
}

// sweep hands msgs to the sweeper as one batch and deletes every record
// it did not report as failed, as the poller does. It returns the ids of
// the failed records.
func (s *suite) sweep(t *testing.T, msgs []sqstypes.Message) []string {
	t.Helper()
	failed, err := s.sweepErr(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return failed
}

func (s *suite) sweepErr(msgs []sqstypes.Message) ([]string, error) {
	return s.deliverErr(s.queueURL, msgs)
}

// deliverErr hands msgs, received from the queue at url, to the sweeper
// as one SQS event and deletes from that queue every record it did not
// report failed: what Lambda's event source mapping does for either queue.
func (s *suite) deliverErr(url string, msgs []sqstypes.Message) ([]string, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	var resp events.SQSEventResponse
	if err := s.sweeper.invoke(ctx, s.sqsEventOf(url, msgs), &resp); err != nil {
		return nil, err
	}
	failed := map[string]bool{}
	var ids []string
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
		ids = append(ids, f.ItemIdentifier)
	}
	var done []sqstypes.Message
	for _, m := range msgs {
		if !failed[aws.ToString(m.MessageId)] {
			done = append(done, m)
		}
	}
	return ids, s.deleteFrom(url, done)
}

func (s *suite) delete(t *testing.T, msgs []sqstypes.Message) {
	t.Helper()
	if err := s.deleteErr(msgs); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) deleteErr(msgs []sqstypes.Message) error {
	return s.deleteFrom(s.queueURL, msgs)
}

func (s *suite) deleteFrom(url string, msgs []sqstypes.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for i, m := range msgs {
		entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
	}
	out, err := s.sqs.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("delete failed: %+v", out.Failed)
	}
	return nil
}

// pump runs the poller loop (receive, sweep, delete) until done says so
// or the deadline passes.
func (s *suite) pump(t *testing.T, within time.Duration, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("not done within %v", within)
		}
		if failed := s.sweep(t, s.receive(t, time.Second)); len(failed) > 0 {
			t.Fatalf("the sweeper failed records %v", failed)
		}
	}
}

// messageFor reports whether m is the timeout message of requestID.
func messageFor(m sqstypes.Message, requestID string) bool {
	var body struct {
		RequestID string `json:"request_id"`
	}
	return json.Unmarshal([]byte(aws.ToString(m.Body)), &body) == nil && body.RequestID == requestID
}

func (s *suite) queueCounts(t *testing.T) (visible, delayed, inFlight int) {
	t.Helper()
	out, err := s.sqs.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(s.queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := func(k sqstypes.QueueAttributeName) int { v, _ := strconv.Atoi(out.Attributes[string(k)]); return v }
	return n(sqstypes.QueueAttributeNameApproximateNumberOfMessages),
		n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed),
		n(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
}
