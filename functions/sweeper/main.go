// Command sweeper is the timeout Lambda function (provided.al2023, built
// as bootstrap) for spawns and approval questions. It receives two kinds
// of event:
//
//   - batches from the timeout queue (SQS event source mapping with
//     ReportBatchItemFailures): each message resolves its spawn (spawn:…)
//     or ends its question (apr:…) by timeout if due, or sends the
//     remainder on if not;
//   - the EventBridge schedule's "Scheduled Event": one "sweep project p"
//     message per project to the sweep work queue (DONT_SWEEP_QUEUE_URL);
//   - batches from the work queue: each sweeps its project (due questions,
//     missing ending frames, due spawns, page by page, then the timeout
//     messages of what came within the horizon), the backstop for lost or
//     parked messages.
//
// Configuration is in package deployment; clients are built once, here,
// before the first event.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/dont-cli/dont/functions/internal/deployment"
)

func main() {
	start := time.Now()
	log := deployment.NewLogger(os.Stdout)
	d, err := deployment.Connect(context.Background(), os.Getenv, "sweeper", log)
	if err != nil {
		log.Error("init", "err", err)
		os.Exit(1)
	}
	h := handler{sweeper: d.Sweeper(), limit: d.Config.SweepLimit, log: log}
	log.Info("init", "duration_ms", float64(time.Since(start).Microseconds())/1000)
	lambda.Start(h.invoke)
}
