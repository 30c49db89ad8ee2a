// Command operator is the operator's Lambda function (provided.al2023,
// built as bootstrap): it makes a project's first token (and with it the
// project's callback secret), sets a project's own settings, rotates and
// retires its secret and backfills its list indexes (reindex), over the
// same table the api function serves. Nothing routes a request here: an
// operator invokes it (aws lambda invoke), and IAM's lambda:InvokeFunction
// on this function alone decides who may. The public api function refuses
// these events, so the right to call the API never includes the right to
// mint a token for any project. See operator.go and docs/aws.md.
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
	d, err := deployment.Connect(context.Background(), os.Getenv, "operator", log)
	if err != nil {
		log.Error("init", "err", err)
		os.Exit(1)
	}
	backend := d.Backend()
	log.Info("init", "duration_ms", float64(time.Since(start).Microseconds())/1000)
	lambda.Start(newFunction(backend, log))
}
