package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/dont-cli/dont/internal/tools"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/dont-cli/dont/internal/faults"
	"github.com/dont-cli/dont/internal/invariants"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

type oneProject struct {
	name string
	svc  *service.Service
}

func (p oneProject) Project(context.Context, string) (sqs.Timeouts, error) { return p.svc, nil }
func (p oneProject) List(context.Context) ([]string, error)                { return []string{p.name}, nil }

// The AWS timeout path end to end under faults: the service on the
// DynamoDB store schedules every spawn on SQS (fauxqs) and a consumer hands
// each delivery to the sweeper, both through fault injectors. Half the
// spawns are resolved by callbacks, half are left to time out. No
// scheduled sweep runs: every expired spawn must be resolved by the
// queue's deliveries (or by the sweep each service call runs first), and
// the invariant checker must find nothing.
func TestSQSTimeoutPathThroughFaults(t *testing.T) {
	sqsEndpoint := os.Getenv("DONT_SQS_ENDPOINT")
	if sqsEndpoint == "" {
		t.Skip("DONT_SQS_ENDPOINT is unset: eval \"$(bash localstack/standins.sh start)\" to run it")
	}
	dynEndpoint, stop, err := standin.Dynamo()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	table, project := fmt.Sprintf("dont-sched-%d", time.Now().UnixNano()), "sched"
	if err := dynamo.CreateTable(ctx, standin.Client(dynEndpoint, nil), table); err != nil {
		t.Fatal(err)
	}
	dynFaults := faults.New(nil, uint64(time.Now().UnixNano()), faults.Mixed()...)
	sqsFaults := faults.New(nil, uint64(time.Now().UnixNano())+1, faults.Mixed()...)
	sqsFaults.Enable(false)
	client := standin.SQSClient(sqsEndpoint, sqsFaults, func(o *awssqs.Options) { o.RetryMaxAttempts = 10 })
	q, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(table), Attributes: map[string]string{"VisibilityTimeout": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
	sqsFaults.Enable(true)

	queue := &sqs.Queue{Client: client, URL: aws.ToString(q.QueueUrl)}
	st := dynamo.New(standin.Client(dynEndpoint, dynFaults), table, project)
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: project, SpawnTimeout: 2 * time.Second, Author: "sched", Scheduler: queue.For(project), ApprovalScheduler: queue.For(project)})
	sweeper := &sqs.Sweeper{Queue: queue, Projects: oneProject{project, svc}}

	// The consumer: receive, expire, delete on success (at least once).
	outcomes := map[string]int{}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			out, err := client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				continue
			}
			for _, m := range out.Messages {
				msg, err := sqs.Decode(aws.ToString(m.Body))
				if err != nil {
					continue
				}
				o, _ := sweeper.Expire(ctx, msg)
				mu.Lock()
				outcomes[o]++
				mu.Unlock()
				if o != sqs.OutcomeFailed {
					client.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle})
				}
			}
		}
	}()

	n := 30
	if testing.Short() { // go test -short: a third of the spawns; CI runs the full count
		n = 10
	}
	var expiring []string
	for i := 0; i < n; i++ {
		res, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: fmt.Sprintf("scheduled claim %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		id := res.ID
		res2, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: id, Mode: spawn.ModeHarness})
		if err != nil {
			t.Fatal(err)
		}
		var req spawn.Request
		if err := json.Unmarshal(res2.Request, &req); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			expiring = append(expiring, req.RequestID)
			continue
		}
		if _, _, err := svc.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: id, Evidence: []string{"https://example.org/x"}, RequestID: req.RequestID}); err != nil {
			t.Fatal(err)
		}
	}

	// Wait until every expiring spawn is resolved, with no scheduled sweep.
	cleanStore := dynamo.New(standin.Client(dynEndpoint, nil), table, project)
	clean := service.New(service.Deps{ToolNames: tools.Names(), Store: cleanStore, Confirmations: cleanStore, Project: project, SpawnTimeout: 2 * time.Second})
	for {
		pending := 0
		for _, id := range expiring {
			sp, err := clean.Store.GetSpawn(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if sp.State == spawn.Pending {
				pending++
			}
		}
		if pending == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d spawns still pending: the timeout path lost them", pending)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	<-done
	d, err := invariants.Read(context.Background(), clean.Store)
	if err != nil {
		t.Fatal(err)
	}
	if rep := invariants.Check(d, time.Now()); !rep.OK() {
		t.Fatal(rep.Error())
	}
	t.Logf("SQS timeout path through faults: %d spawns left to expire, all resolved without a scheduled sweep; deliveries %v; DynamoDB %s; SQS %s; 0 invariant violations",
		len(expiring), outcomes, dynFaults.Summary(), sqsFaults.Summary())
}
