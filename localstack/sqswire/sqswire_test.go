// Package sqswire proves that the SQS stand-in (fauxqs, started by
// localstack/standins.sh) speaks the wire protocol aws-sdk-go-v2's SQS
// client uses: delayed SendMessage, ReceiveMessage with long polling,
// DeleteMessage, and redrive to a dead-letter queue. It runs against
// DONT_SQS_ENDPOINT and is skipped when that is unset.
package sqswire

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func client(t *testing.T) (*sqs.Client, string) {
	t.Helper()
	endpoint := os.Getenv("DONT_SQS_ENDPOINT")
	if endpoint == "" {
		t.Skip("DONT_SQS_ENDPOINT is unset: start the stand-ins with `eval \"$(bash localstack/standins.sh start)\"` to run the SQS wire test")
	}
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	}), endpoint
}

func createQueue(t *testing.T, ctx context.Context, c *sqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
	})
	return aws.ToString(out.QueueUrl)
}

func unique(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

func TestDelayedSendAndReceive(t *testing.T) {
	c, endpoint := client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	queueName := unique("dont-wire")
	queueURL := createQueue(t, ctx, c, queueName, nil)

	// fauxqs finds a queue by the exact URL string it handed out
	// (http://sqs.REGION.localhost:PORT/000000000000/NAME), whatever
	// endpoint string the client called: clients must use that URL, from
	// CreateQueue or GetQueueUrl, and never rebuild it from the endpoint.
	byName, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queueName)})
	if err != nil || aws.ToString(byName.QueueUrl) != queueURL {
		t.Errorf("GetQueueUrl = %v, %v; want %q", byName, err, queueURL)
	}
	rebuilt := strings.TrimSuffix(endpoint, "/") + "/000000000000/" + queueName
	if _, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(rebuilt)}); err != nil && rebuilt != queueURL {
		t.Logf("a queue URL rebuilt from the endpoint (%s) is refused: %v", rebuilt, err)
	}

	body := `{"request_id":"spawn:01HXWIRE","expires_at":"2026-01-02T03:04:05.000000000Z"}`
	sent := time.Now()
	out, err := c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(queueURL),
		MessageBody:  aws.String(body),
		DelaySeconds: 2,
		MessageAttributes: map[string]types.MessageAttributeValue{
			"kind": {DataType: aws.String("String"), StringValue: aws.String("spawn_timeout")},
		},
	})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if aws.ToString(out.MessageId) == "" {
		t.Error("SendMessage returned no MessageId")
	}

	early, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 0})
	if err != nil {
		t.Fatalf("ReceiveMessage before the delay: %v", err)
	}
	if len(early.Messages) != 0 && time.Since(sent) < 2*time.Second {
		t.Errorf("a message delayed 2 s was delivered after %v", time.Since(sent))
	}

	var got []types.Message
	for len(got) == 0 && ctx.Err() == nil {
		r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queueURL),
			WaitTimeSeconds:             5,
			MaxNumberOfMessages:         10,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		got = r.Messages
	}
	lag := time.Since(sent)
	if len(got) != 1 {
		t.Fatalf("received %d messages, want 1", len(got))
	}
	m := got[0]
	if aws.ToString(m.Body) != body {
		t.Errorf("body = %q, want %q", aws.ToString(m.Body), body)
	}
	if v := m.MessageAttributes["kind"]; aws.ToString(v.StringValue) != "spawn_timeout" {
		t.Errorf("message attribute kind = %+v", v)
	}
	if m.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("ApproximateReceiveCount = %q, want 1", m.Attributes["ApproximateReceiveCount"])
	}
	if lag < 2*time.Second {
		t.Errorf("delivered after %v, before its 2 s delay", lag)
	}
	t.Logf("delay 2 s, delivered after %v", lag.Round(time.Millisecond))

	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		if attrs.Attributes[a] != "0" {
			t.Errorf("%s = %q after delete, want 0", a, attrs.Attributes[a])
		}
	}
}

func TestFifteenMinuteDelayIsAccepted(t *testing.T) {
	c, _ := client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	queueURL := createQueue(t, ctx, c, unique("dont-wire-delay"), nil)
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String("x"), DelaySeconds: 900}); err != nil {
		t.Errorf("DelaySeconds 900: %v", err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String("x"), DelaySeconds: 901}); err == nil {
		// Real SQS refuses it (InvalidParameterValue); fauxqs 1.9.2 does
		// not. The SQS scheduler must cap delays itself.
		t.Log("DelaySeconds 901 accepted by this endpoint; real SQS refuses delays over 900 s")
	}
}

func TestRedriveToDeadLetterQueue(t *testing.T) {
	c, _ := client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dlqURL := createQueue(t, ctx, c, unique("dont-wire-dlq"), nil)
	dlqAttrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(dlqURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	queueURL := createQueue(t, ctx, c, unique("dont-wire-src"), map[string]string{
		"VisibilityTimeout": "1",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"1"}`, dlqAttrs.Attributes["QueueArn"]),
	})
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String("poison")}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	// Receive without deleting: the sweeper failed this item.
	first, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 2})
	if err != nil || len(first.Messages) != 1 {
		t.Fatalf("first receive: %v, %d messages", err, len(first.Messages))
	}
	var moved []types.Message
	for len(moved) == 0 && ctx.Err() == nil {
		// After the visibility timeout the next receive redrives it.
		_, _ = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), WaitTimeSeconds: 1})
		r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlqURL), WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("receive from DLQ: %v", err)
		}
		moved = r.Messages
	}
	if len(moved) != 1 || !strings.Contains(aws.ToString(moved[0].Body), "poison") {
		t.Fatalf("DLQ holds %v, want the poison message", moved)
	}
}
