package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
)

// newFunction is the Lambda handler: an HTTP API event (payload 2.0) goes
// to the API handler. An operator event is refused: operator actions
// (a project's first token, its settings) run only in the operator
// function, so a grant to invoke this public function is never a grant to
// mint a token for any project.
func newFunction(api func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var probe struct {
			Operator json.RawMessage `json:"dont_operator"`
		}
		if err := json.Unmarshal(raw, &probe); err == nil && probe.Operator != nil {
			return json.RawMessage(envelope.Marshal(envelope.Fail(errs.As(errs.E(service.Forbidden,
				"operator actions are not taken by the api function",
				errs.Step{
					Command:     `aws lambda invoke --function-name "$DONT_OPERATOR_FUNCTION" --cli-binary-format raw-in-base64-out --payload '{"dont_operator":{…}}' /dev/stdout`,
					Description: "invoke the operator function (its own IAM permission) with the same event",
				})), nil))), nil
		}
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("unreadable event: %w", err)
		}
		return api(ctx, ev)
	}
}
