package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/httpapi"
)

// newHandler turns API Gateway HTTP API (payload 2.0) events into
// requests for the one net/http handler `dont serve` also runs. Its
// per-request line is DEBUG behind a stage that logs every request
// (deployment.CallLogger).
func newHandler(backend httpapi.Backend, log *slog.Logger, opts ...httpapi.Options) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	var o httpapi.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Backend, o.Log = backend, deployment.CallLogger(log)
	api := httpapi.New(o)
	return httpadapter.NewV2(withRequestID(api, log)).ProxyWithContext
}

// withRequestID makes the invocation's Lambda request id the request id
// of the envelope (meta.request_id, X-Request-Id) unless the caller sent
// its own, so that a response, the API's log line and Lambda's REPORT
// line share one id. When the caller's id wins, one line ties the two.
func withRequestID(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lc, ok := lambdacontext.FromContext(r.Context()); ok {
			if given := r.Header.Get("X-Request-Id"); given == "" {
				r.Header.Set("X-Request-Id", lc.AwsRequestID)
			} else {
				log.InfoContext(r.Context(), "request", "request_id", given, "method", r.Method, "path", r.URL.Path)
			}
		}
		next.ServeHTTP(w, r)
	})
}
