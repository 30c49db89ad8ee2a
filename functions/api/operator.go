package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/httpapi"
)

// operatorEvent is what an operator sends by invoking the function
// directly (aws lambda invoke): IAM decides who may, and API Gateway never
// sends it. It makes a project's first token, which nothing else can: the
// API needs a token to create one.
type operatorEvent struct {
	Operator *struct {
		CreateToken *struct {
			Project string `json:"project"`
			Role    string `json:"role"`
			Name    string `json:"name"`
		} `json:"create_token"`
	} `json:"dont_operator"`
}

// projects opens a project's service (dynamo.Backend does).
type projects interface {
	Project(name string) httpapi.Project
}

// newFunction is the Lambda handler: an HTTP API event goes to the API
// handler, an operator event to the operator action; the answer to an
// operator event is an envelope like every other answer.
func newFunction(backend projects, api func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error), log *slog.Logger) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var op operatorEvent
		if err := json.Unmarshal(raw, &op); err == nil && op.Operator != nil {
			return operate(ctx, backend, op, log), nil
		}
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("unreadable event: %w", err)
		}
		return api(ctx, ev)
	}
}

var createTokenStep = errs.Step{
	Command:     `aws lambda invoke --function-name "$DONT_API_FUNCTION" --cli-binary-format raw-in-base64-out --payload '{"dont_operator":{"create_token":{"project":"<project>","role":"admin"}}}' /dev/stdout`,
	Description: "create a project's token: project is required; role is admin (default), harness or approver",
}

func operate(ctx context.Context, backend projects, op operatorEvent, log *slog.Logger) json.RawMessage {
	in := op.Operator.CreateToken
	if in == nil {
		return failure(errs.E(errs.InvalidArgument, "unknown operator action: the one action is create_token", createTokenStep).Unmet("dont_operator.create_token"))
	}
	if in.Project == "" {
		return failure(errs.E(errs.InvalidArgument, "create_token needs a project", createTokenStep).Unmet("project must not be empty"))
	}
	role := in.Role
	if role == "" {
		role = "admin"
	}
	name := in.Name
	if name == "" {
		name = "operator"
	}
	res, err := backend.Project(in.Project).Service.CreateToken(ctx, role, name)
	if err != nil {
		return failure(err)
	}
	log.InfoContext(ctx, "operator", "action", "create_token", "project", in.Project, "role", role)
	env, err := envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
	if err != nil {
		return failure(errs.E(errs.Internal, "cannot encode the result").Wrap(err))
	}
	return envelope.Marshal(env)
}

func failure(err error) json.RawMessage {
	return envelope.Marshal(envelope.Fail(err, nil))
}
