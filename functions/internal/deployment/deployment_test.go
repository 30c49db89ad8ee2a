package deployment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	sqssched "github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

var ctx = context.Background()

func TestConfigFromEnvironment(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	c, err := ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvProjects, " acme, ,globex "))
	if err != nil {
		t.Fatal(err)
	}
	if c.SpawnTimeout != 24*time.Hour || c.SweepLimit != DefaultSweepLimit || !reflect.DeepEqual(c.Projects, []string{"acme", "globex"}) || c.HookCache != DefaultHookCache {
		t.Fatalf("defaults: %+v", c)
	}
	if c, err := ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvHookCache, "0s")); err != nil || c.HookCache != 0 {
		t.Fatalf("no hook cache: %+v %v", c, err)
	}
	if c.SweepAfterEvery != DefaultSweepAfterEvery {
		t.Fatalf("the sweep after a callback: %v, want at most once per %v", c.SweepAfterEvery, DefaultSweepAfterEvery)
	}
	if c, err := ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvSweepAfterEvery, "0s")); err != nil || c.SweepAfterEvery != 0 {
		t.Fatalf("a sweep after every callback: %+v %v", c, err)
	}
	if _, err := ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvSweepAfterEvery, "-1s")); err == nil {
		t.Fatal("a negative sweep interval was accepted")
	}
	c, err = ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvSpawnTimeout, "90s", EnvSweepLimit, "50"))
	if err != nil || c.SpawnTimeout != 90*time.Second || c.SweepLimit != 50 {
		t.Fatalf("%+v %v", c, err)
	}
	if c.ApprovalPoll != DefaultApprovalPoll || c.ApprovalTimeout != 0 || c.SubscriberLease != 0 || c.FrameRetention != 0 {
		t.Fatalf("approval defaults: %+v", c)
	}
	c, err = ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvApprovalTimeout, "3s", EnvSubscriberLease, "20s",
		EnvApprovalPoll, "50ms", EnvFrameRetention, "720h"))
	if err != nil || c.ApprovalTimeout != 3*time.Second || c.SubscriberLease != 20*time.Second || c.ApprovalPoll != 50*time.Millisecond || c.FrameRetention != 720*time.Hour {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvDeliveryRetention, "168h")); err != nil || c.DeliveryRetention != 168*time.Hour {
		t.Fatalf("a delivery retention: %+v %v", c, err)
	}
	if c, err := ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvFrameRetention, "0")); err != nil || c.FrameRetention != 0 {
		t.Fatalf("a zero retention keeps frames: %+v %v", c, err)
	}
	for _, bad := range [][]string{
		{EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvApprovalTimeout, "0"},
		{EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvApprovalPoll, "fast"},
		{EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvFrameRetention, "-1h"},
		{EnvTimeoutQueueURL, "http://q"},
		{EnvTable, "dont"},
		{EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvSpawnTimeout, "soon"},
		{EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvSpawnTimeout, "-1s"},
		{EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvSweepLimit, "0"},
		{EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvHookCache, "-1s"},
		{EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvHookCache, "1m"}, // a hook add would outwait API Gateway
	} {
		if _, err := ConfigFromEnv(env(bad...)); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// fakeTable keeps registry items and counts writes.
type fakeTable struct {
	mu     sync.Mutex
	items  map[string]string // sk -> since
	puts   int
	broken bool
}

func (f *fakeTable) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken {
		return nil, errors.New("throttled")
	}
	f.puts++
	if in.Item["pk"].(*types.AttributeValueMemberS).Value != RegistryPartition || *in.ConditionExpression != "attribute_not_exists(pk)" {
		return nil, errors.New("unexpected put")
	}
	sk := in.Item["sk"].(*types.AttributeValueMemberS).Value
	if _, ok := f.items[sk]; ok {
		return nil, &types.ConditionalCheckFailedException{}
	}
	f.items[sk] = in.Item["since"].(*types.AttributeValueMemberS).Value
	return &dynamodb.PutItemOutput{}, nil
}

func (f *fakeTable) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for k := range f.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Two pages, to exercise pagination.
	start := 0
	if in.ExclusiveStartKey != nil {
		start = 1
	}
	out := &dynamodb.QueryOutput{}
	for i := start; i < len(keys) && (start == 1 || i < 1); i++ {
		out.Items = append(out.Items, map[string]types.AttributeValue{"sk": &types.AttributeValueMemberS{Value: keys[i]}})
	}
	if start == 0 && len(keys) > 1 {
		out.LastEvaluatedKey = map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: RegistryPartition}}
	}
	return out, nil
}

type fakeQueue struct {
	mu   sync.Mutex
	sent []string
}

func (q *fakeQueue) SendMessage(_ context.Context, in *awssqs.SendMessageInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, *in.MessageBody)
	return &awssqs.SendMessageOutput{}, nil
}

func testDeployment(t *testing.T, table *fakeTable, q *fakeQueue) *Deployment {
	dir := t.TempDir()
	return &Deployment{
		// Within the 15-minute horizon, so that every spawn sends its message at once.
		Config: Config{Table: "dont", QueueURL: "http://q", SpawnTimeout: 10 * time.Minute, Projects: []string{"configured", "acme"}},
		Author: "api", Log: slog.New(slog.DiscardHandler),
		Open: func(project string) Store {
			st, err := sqlite.Create(context.Background(), filepath.Join(dir, project+".db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		Queue:    &sqssched.Queue{Client: q, URL: "http://q"},
		Registry: &Registry{Client: table, Table: "dont"},
	}
}

func issue(t *testing.T, s *service.Service) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: res.ID}); err != nil {
		t.Fatal(err)
	}
}

func TestAProjectIsRegisteredWithItsFirstSpawnAndListedForTheSweep(t *testing.T) {
	table, q := &fakeTable{items: map[string]string{}}, &fakeQueue{}
	d := testDeployment(t, table, q)
	if first, again := d.Service("acme"), d.Service("acme"); first != again {
		t.Fatal("a project's service is not kept")
	}
	issue(t, d.Service("acme"))
	issue(t, d.Service("acme"))
	issue(t, d.Service("globex"))
	if table.puts != 2 || len(q.sent) != 3 {
		t.Fatalf("%d registry writes (want 2: once per project per process), %d messages (want 3)", table.puts, len(q.sent))
	}
	if !strings.Contains(q.sent[2], `"project":"globex"`) {
		t.Fatalf("message %s", q.sent[2])
	}
	// A second process registers again; the registry keeps one item.
	d2 := testDeployment(t, table, q)
	issue(t, d2.Service("acme"))
	names, err := d.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"acme", "configured", "globex"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("List = %v, want %v", names, want)
	}
}

// A spawn beyond the horizon sends no message when it is issued; the
// scheduled sweep sends it one later, so its project must be registered
// all the same.
func TestASpawnBeyondTheHorizonRegistersItsProjectWithoutAMessage(t *testing.T) {
	table, q := &fakeTable{items: map[string]string{}}, &fakeQueue{}
	d := testDeployment(t, table, q)
	d.Config.SpawnTimeout = 24 * time.Hour
	issue(t, d.Service("globex"))
	if _, ok := table.items["globex"]; !ok || table.puts != 1 || len(q.sent) != 0 {
		t.Fatalf("registry %v after %d puts, %d messages: want globex registered and no message", table.items, table.puts, len(q.sent))
	}
	names, err := d.List(context.Background())
	if err != nil || !slices.Contains(names, "globex") {
		t.Fatalf("List = %v %v, want globex for the scheduled sweep", names, err)
	}
}

func TestAFailedRegistrationStillSendsTheTimeoutMessage(t *testing.T) {
	table, q := &fakeTable{items: map[string]string{}, broken: true}, &fakeQueue{}
	d := testDeployment(t, table, q)
	issue(t, d.Service("acme"))
	if len(q.sent) != 1 {
		t.Fatalf("%d messages", len(q.sent))
	}
	table.broken = false
	issue(t, d.Service("acme"))
	if len(table.items) != 1 {
		t.Fatal("the next spawn did not retry the registration")
	}
}

// A project whose only use is tier escalation is registered with its
// first question, and each question sends its delayed timeout message.
func TestAQuestionRegistersTheProjectAndSendsItsTimeoutMessage(t *testing.T) {
	table, q := &fakeTable{items: map[string]string{}}, &fakeQueue{}
	d := testDeployment(t, table, q)
	d.Config.ApprovalTimeout = 90 * time.Second
	s := d.Service("acme")
	if s.Approvals.Store == nil || s.Approvals.Timeout != 90*time.Second {
		t.Fatalf("approvals not wired: %+v", s.Approvals)
	}
	res, err := s.Escalations.OpenSession(ctx, service.OpenSessionInput{Tier: "read-only"})
	if err != nil {
		t.Fatal(err)
	}
	session := res.ID
	if _, err := s.Escalations.Frames(ctx, service.FramesInput{SessionID: session, Subscriber: "approver"}); err != nil {
		t.Fatal(err)
	}
	res2, _, err := s.Escalations.Escalate(ctx, service.EscalateInput{SessionID: session, CallID: "c-1", To: "workspace-write", Reason: "writes the build", NoWait: true})
	if err != nil {
		t.Fatal(err)
	}
	id := res2.ID
	if len(q.sent) != 1 || !strings.Contains(q.sent[0], `"request_id":"`+id+`"`) || !strings.Contains(q.sent[0], `"project":"acme"`) {
		t.Fatalf("messages %v, want the question's", q.sent)
	}
	if _, ok := table.items["acme"]; !ok || table.puts != 1 {
		t.Fatalf("registry %v after %d puts", table.items, table.puts)
	}
}

func TestTheFunctionsLogAtTheLevelTheStackSets(t *testing.T) {
	for level, want := range map[string][]string{
		"":      {"info", "warn"},
		"DEBUG": {"debug", "info", "warn"},
		"WARN":  {"warn"},
		"ERROR": {},
	} {
		t.Run("level "+level, func(t *testing.T) {
			t.Setenv(EnvLogLevel, level)
			var buf bytes.Buffer
			log := NewLogger(&buf)
			log.Debug("debug")
			log.Info("info")
			log.Warn("warn")
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil {
					got = append(got, m["msg"].(string))
				}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("logged %v, want %v", got, want)
			}
		})
	}
}

// The person's session ceiling reaches the functions only through their
// environment, which the operator sets; a name that is no tier stops the
// cold start rather than admit every tier.
func TestTheSessionCeilingIsReadFromTheFunctionsEnvironment(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	c, err := ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q"))
	if err != nil || c.SessionCeiling != "" {
		t.Fatalf("unset: %q, %v", c.SessionCeiling, err)
	}
	c, err = ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvSessionCeiling, "read-only"))
	if err != nil || c.SessionCeiling != "read-only" {
		t.Fatalf("read-only: %q, %v", c.SessionCeiling, err)
	}
	if _, err := ConfigFromEnv(env(EnvTable, "dont", EnvTimeoutQueueURL, "http://q", EnvSessionCeiling, "everything")); err == nil {
		t.Fatal("a ceiling that is no tier was accepted")
	}
}
