package faults_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/dont-cli/dont/internal/faults"
)

// Through every fault kind, SQS keeps its at-least-once promise as the
// timeout scheduler relies on it: every message whose SendMessage
// succeeded (retries included) is received, duplicates from lost
// responses are possible and counted. It runs against DONT_SQS_ENDPOINT
// (fauxqs from localstack/standins.sh) and is skipped without it.
func TestSQSAtLeastOnceThroughFaults(t *testing.T) {
	endpoint := os.Getenv("DONT_SQS_ENDPOINT")
	if endpoint == "" {
		t.Skip("DONT_SQS_ENDPOINT is unset: eval \"$(bash localstack/standins.sh start)\" to run it")
	}
	ft := faults.New(nil, uint64(time.Now().UnixNano()), faults.Mixed()...)
	ft.Enable(false)
	c := sqs.New(sqs.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:       &http.Client{Transport: ft, Timeout: 30 * time.Second},
		RetryMaxAttempts: 10,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("dont-faults-%d", time.Now().UnixNano())),
		Attributes: map[string]string{"VisibilityTimeout": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
	ft.Enable(true)

	n := 60
	if testing.Short() { // go test -short: a third of the messages; CI runs the full count
		n = 20
	}
	sent := map[string]bool{}
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("spawn:%04d", i)
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body)}); err != nil {
			t.Logf("send %s failed after retries: %v", body, err)
			continue
		}
		sent[body] = true
	}
	got, deliveries := map[string]bool{}, 0
	for len(got) < len(sent) && ctx.Err() == nil {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			continue
		}
		for _, m := range out.Messages {
			deliveries++
			got[aws.ToString(m.Body)] = true
			c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle})
		}
	}
	for body := range sent {
		if !got[body] {
			t.Errorf("%s was sent but never received", body)
		}
	}
	t.Logf("SQS through faults: %d sent, %d distinct received in %d deliveries; %s", len(sent), len(got), deliveries, ft.Summary())
	if len(sent) < n*9/10 {
		t.Fatalf("only %d of %d sends succeeded within the SDK's retries", len(sent), n)
	}
}
