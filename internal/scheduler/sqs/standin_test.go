package sqs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// oneProject is a deployment of one project.
type oneProject struct {
	name string
	svc  *service.Service
}

func (p oneProject) Project(context.Context, string) (sqs.Timeouts, error) { return p.svc, nil }
func (p oneProject) List(context.Context) ([]string, error)                { return []string{p.name}, nil }

// The horizon over the AWS wire protocols: the DynamoDB store's index
// answers the horizon's read of a future instant, and fauxqs holds the
// messages it sends. The clock is the wall clock plus an offset the test
// moves, so that "a day later" takes no time; only the last message's
// short delay is waited out on the real queue.
func TestTheHorizonOnTheDynamoDBStoreAndFauxqs(t *testing.T) {
	sqsEndpoint := os.Getenv("DONT_SQS_ENDPOINT")
	if sqsEndpoint == "" {
		t.Skip("DONT_SQS_ENDPOINT is unset: eval \"$(bash localstack/standins.sh start)\" to run it")
	}
	dynEndpoint, stop, err := standin.Dynamo()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	name, project := fmt.Sprintf("dont-horizon-%d", time.Now().UnixNano()), "horizon"
	if err := dynamo.CreateTable(ctx, standin.Client(dynEndpoint, nil), name); err != nil {
		t.Fatal(err)
	}
	client := standin.SQSClient(sqsEndpoint, nil)
	q, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: q.QueueUrl})

	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())).UTC() }
	queue := &sqs.Queue{Client: client, URL: aws.ToString(q.QueueUrl), Now: now}
	st := dynamo.New(standin.Client(dynEndpoint, nil), name, project)
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: project, Clock: now, SpawnTimeout: 24 * time.Hour, Author: "horizon", Scheduler: queue.For(project), ApprovalScheduler: queue.For(project),
		Approvals: service.Approvals{Store: st}})
	sweeper := &sqs.Sweeper{Queue: queue, Projects: oneProject{project, svc}}
	counts := func() (visible, delayed int) {
		t.Helper()
		out, err := client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Sscan(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)], &visible)
		fmt.Sscan(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)], &delayed)
		return visible, delayed
	}
	issue := func() (string, spawn.Request) {
		t.Helper()
		res, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("claim %d", time.Now().UnixNano())})
		if err != nil {
			t.Fatal(err)
		}
		id := res.ID
		if _, _, err := svc.Ledger.Transition(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: id, Evidence: []string{"https://example.org/a"}}); err != nil {
			t.Fatal(err)
		}
		res2, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id, Mode: spawn.ModeHarness})
		if err != nil {
			t.Fatal(err)
		}
		var req spawn.Request
		if err := json.Unmarshal(res2.Request, &req); err != nil {
			t.Fatal(err)
		}
		return id, req
	}

	// Two 24-hour spawns, issued a second apart: no message for either.
	_, first := issue()
	offset.Add(int64(time.Second))
	eid, second := issue()
	if v, d := counts(); v+d != 0 {
		t.Fatalf("issuing two 24-hour spawns left %d visible and %d delayed messages, want none", v, d)
	}

	// The scheduled sweep when the first has 14m59.5s left and the second
	// 15m0.5s: its window (14m, 15m] holds only the first, whose message
	// waits on the queue, delayed.
	offset.Store(int64(time.Until(first.ExpiresAt) - (15*time.Minute - 500*time.Millisecond)))
	rep, err := sweeper.SweepAll(ctx, 100)
	if err != nil || len(rep.Projects) != 1 || rep.Projects[0].Scheduled != 1 {
		t.Fatalf("scheduled sweep %+v %v, want 1 scheduled", rep, err)
	}
	if v, d := counts(); v != 0 || d != 1 {
		t.Fatalf("%d visible and %d delayed messages after the sweep, want the first spawn's, delayed", v, d)
	}

	// The second, handed over with a horizon short enough to wait out here
	// (the first, due by then, is not): its message comes due on the queue
	// and the sweeper times the spawn out.
	offset.Store(int64(time.Until(second.ExpiresAt) - 800*time.Millisecond))
	if n, err := svc.ScheduleComingDue(ctx, time.Second, time.Second, 100); err != nil || n != 1 {
		t.Fatalf("ScheduleComingDue = %d, %v, want the second spawn only", n, err)
	}
	var got []events.SQSMessage
	for len(got) == 0 && ctx.Err() == nil {
		out, err := client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if now().Before(second.ExpiresAt.Add(-time.Second)) {
				t.Fatalf("a message arrived %v before its expiry", second.ExpiresAt.Sub(now()))
			}
			got = append(got, events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), EventSource: "aws:sqs"})
		}
	}
	if len(got) != 1 || mustDecode(t, got[0].Body).RequestID != second.RequestID {
		t.Fatalf("received %+v, want the second spawn's message", got)
	}
	if f := failures(sweeper.HandleSQS(ctx, events.SQSEvent{Records: got})); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	sp, err := st.GetSpawn(ctx, second.RequestID)
	if err != nil || sp.Outcome != spawn.TimeoutRestored {
		t.Fatalf("spawn %+v %v, want timed out", sp, err)
	}
	if e, err := st.GetEntity(ctx, eid); err != nil || e.Status != ledger.Verified {
		t.Fatalf("entity %+v %v, want verified restored", e, err)
	}
}
