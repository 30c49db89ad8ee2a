package sqs_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/standin"
)

// lister is a deployment's project list; the fan-out opens no project.
type lister []string

func (l lister) Project(context.Context, string) (sqs.Timeouts, error) {
	return nil, fmt.Errorf("the fan-out opened a project")
}
func (l lister) List(context.Context) ([]string, error) { return l, nil }

// queueSQS is a work queue in memory: what was sent and not yet taken
// waits, and its count answers GetQueueAttributes as SQS does.
type queueSQS struct {
	batchSQS
	mu      sync.Mutex
	waiting []string
}

func (q *queueSQS) SendMessageBatch(ctx context.Context, in *awssqs.SendMessageBatchInput, o ...func(*awssqs.Options)) (*awssqs.SendMessageBatchOutput, error) {
	q.mu.Lock()
	for _, e := range in.Entries {
		q.waiting = append(q.waiting, *e.MessageBody)
	}
	q.mu.Unlock()
	return q.batchSQS.SendMessageBatch(ctx, in, o...)
}

func (q *queueSQS) GetQueueAttributes(context.Context, *awssqs.GetQueueAttributesInput, ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return &awssqs.GetQueueAttributesOutput{Attributes: map[string]string{
		string(sqstypes.QueueAttributeNameApproximateNumberOfMessages):        strconv.Itoa(len(q.waiting)),
		string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed): "0"}}, nil
}

func (q *queueSQS) consume() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	got := q.waiting
	q.waiting = nil
	return got
}

// A scheduled run while the last run's sweep messages still wait (the
// consumers are behind) sends none: each project has at most one sweep
// pending, however many runs pass, and once the consumers catch up the
// next run sends the round again.
func TestScheduledRunsBehindSlowConsumersLeaveOneSweepPerProjectPending(t *testing.T) {
	q := &queueSQS{}
	projects := lister{"acme", "globex", "initech"}
	work := &sqs.Queue{Client: q, URL: "http://127.0.0.1:1/000000000000/sweeps"}
	sw := &sqs.Sweeper{Queue: work, Projects: projects, Work: work}
	for run := range 5 {
		rep, err := sw.SweepAll(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 3, false: 0}[run == 0]; rep.Enqueued != want {
			t.Fatalf("run %d enqueued %d, want %d", run, rep.Enqueued, want)
		}
	}
	if got := q.consume(); strings.Join(got, " ") != `{"v":1,"sweep":"acme"} {"v":1,"sweep":"globex"} {"v":1,"sweep":"initech"}` {
		t.Fatalf("waiting after five runs: %v, want one sweep per project", got)
	}
	if rep, err := sw.SweepAll(ctx, 100); err != nil || rep.Enqueued != 3 {
		t.Fatalf("the run after the consumers caught up: %+v %v, want the round sent", rep, err)
	}
}

// The same over the SQS wire protocol, on fauxqs: the counts the fan-out
// reads are the queue's own.
func TestScheduledRunsLeaveOneSweepPerProjectPendingOnFauxqs(t *testing.T) {
	endpoint := os.Getenv("DONT_SQS_ENDPOINT")
	if endpoint == "" {
		t.Skip("DONT_SQS_ENDPOINT is unset: eval \"$(bash localstack/standins.sh start)\" to run it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := standin.SQSClient(endpoint, nil)
	created, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("dont-sweeps-%d", time.Now().UnixNano()))})
	if err != nil {
		t.Fatal(err)
	}
	defer client.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: created.QueueUrl})
	work := &sqs.Queue{Client: client, URL: aws.ToString(created.QueueUrl)}
	sw := &sqs.Sweeper{Queue: work, Projects: lister{"acme", "globex", "initech"}, Work: work}
	enqueued := 0
	for range 4 {
		rep, err := sw.SweepAll(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		enqueued += rep.Enqueued
	}
	if n, ok, err := work.Waiting(ctx); err != nil || !ok || n != 3 || enqueued != 3 {
		t.Fatalf("after four runs %d messages wait (%v %v) of %d sent, want one per project", n, ok, err, enqueued)
	}
	for taken := 0; taken < 3 && ctx.Err() == nil; {
		out, err := client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: created.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if _, err := client.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: created.QueueUrl, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			taken++
		}
	}
	if rep, err := sw.SweepAll(ctx, 100); err != nil || rep.Enqueued != 3 {
		t.Fatalf("the run after the round was consumed: %+v %v, want it sent again", rep, err)
	}
}
