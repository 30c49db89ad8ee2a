// Command api is the API Lambda function (provided.al2023, built as
// bootstrap): API Gateway HTTP API events (payload 2.0) in, the same
// net/http handler `dont serve` runs, over the DynamoDB store of every
// project in the table (a token leads to its project). Each spawn it
// issues, and each approval question it asks, sends one delayed message
// to the timeout queue. Sessions, approvals and their frames live in the
// same table (the service's Approvals store is the project's store).
//
// It refuses operator events (function.go): a project's first token is
// made by the operator function (functions/operator).
//
// Everything is built once per cold start, before the first event.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/settings"
)

func main() {
	start := time.Now()
	log := deployment.NewLogger(os.Stdout)
	d, err := deployment.Connect(context.Background(), os.Getenv, "api", log)
	if err != nil {
		log.Error("init", "err", err)
		os.Exit(1)
	}
	backend := d.Backend()
	o, err := limits(os.Getenv, httpapi.Options{})
	if err != nil {
		log.Error("init", "err", err)
		os.Exit(1)
	}
	// The Slack app's endpoint, when the deployment configures one
	// (docs/approvals.md, "Slack"): its signing secret is set at deploy
	// time like the deployment's other secrets, never by an agent.
	if secret := os.Getenv(settings.EnvSlackSigningSecret); secret != "" {
		o.Slack = &httpapi.SlackOptions{SigningSecret: secret, Project: os.Getenv(settings.EnvSlackProject), PublicURL: os.Getenv(settings.EnvPublicURL)}
	}
	handler := newFunction(newHandler(backend, log, o))
	log.Info("init", "duration_ms", float64(time.Since(start).Microseconds())/1000)
	lambda.Start(handler)
}
