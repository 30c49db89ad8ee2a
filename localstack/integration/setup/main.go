// Command setup creates the table, the timeout queue and the KMS key that
// seals project secrets, which the integration suite runs against, on
// whatever endpoint the SDK's defaults name (AWS_ENDPOINT_URL, or
// AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_KMS),
// and prints them as shell exports:
//
//	export DONT_TABLE=... DONT_TIMEOUT_QUEUE_URL=... DONT_SWEEP_QUEUE_URL=... DONT_SECRETS_KEY=...
//
// The sweep work queue (-sweep-queue) is the scheduled sweep's fan-out:
// infra/stack gives its URL to the sweeper alone, as DONT_SWEEP_QUEUE_URL.
//
// The queue URL is the one the SQS endpoint returns: fauxqs matches queue
// URLs by exact host, so every client must use the same endpoint string.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/store/dynamo"
)

func main() {
	table := flag.String("table", "", "table name")
	queue := flag.String("queue", "", "queue name")
	sweepQueue := flag.String("sweep-queue", "", "the sweep work queue's name")
	visibility := flag.Int("visibility", 30, "the queue's visibility timeout in seconds")
	flag.Parse()
	if *table == "" || *queue == "" || *sweepQueue == "" {
		fmt.Fprintln(os.Stderr, "usage: setup -table NAME -queue NAME -sweep-queue NAME")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fail(err)
	}
	if err := dynamo.CreateTable(ctx, dynamodb.NewFromConfig(cfg), *table); err != nil {
		fail(err)
	}
	sqsClient := awssqs.NewFromConfig(cfg)
	createQueue := func(name string) string {
		out, err := sqsClient.CreateQueue(ctx, &awssqs.CreateQueueInput{
			QueueName: aws.String(name),
			Attributes: map[string]string{
				string(types.QueueAttributeNameVisibilityTimeout):      fmt.Sprint(*visibility),
				string(types.QueueAttributeNameMessageRetentionPeriod): "3600",
			},
		})
		if err != nil {
			fail(fmt.Errorf("create queue %s: %w", name, err))
		}
		return aws.ToString(out.QueueUrl)
	}
	timeouts, sweeps := createQueue(*queue), createQueue(*sweepQueue)
	key, err := awskms.NewFromConfig(cfg).CreateKey(ctx, &awskms.CreateKeyInput{Description: aws.String("dont integration: project secrets")})
	if err != nil {
		fail(fmt.Errorf("create the secrets key: %w", err))
	}
	fmt.Printf("export DONT_TABLE=%s DONT_TIMEOUT_QUEUE_URL=%s DONT_SWEEP_QUEUE_URL=%s DONT_SECRETS_KEY=%s\n", *table, timeouts, sweeps, aws.ToString(key.KeyMetadata.Arn))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "setup:", err)
	os.Exit(1)
}
