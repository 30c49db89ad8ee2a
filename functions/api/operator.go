package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/tools"
)

// operatorEvent is what an operator sends by invoking the function
// directly (aws lambda invoke): IAM decides who may, and API Gateway never
// sends it. It makes a project's first token, which nothing else can: the
// API needs a token to create one; and with it the project's callback
// secret, which nothing a request sends can make.
type operatorEvent struct {
	Operator *struct {
		CreateToken *struct {
			Project string `json:"project"`
			Role    string `json:"role"`
			Name    string `json:"name"`
		} `json:"create_token"`
		// SetProject sets a project's own settings (docs/design.md §5.5: the spawn
		// timeout is per project; the deployment's DONT_SPAWN_TIMEOUT is
		// the default).
		SetProject *struct {
			Project      string `json:"project"`
			SpawnTimeout string `json:"spawn_timeout"`
		} `json:"set_project"`
	} `json:"dont_operator"`
}

// projects opens a project's service and keeps its settings (dynamo.Backend does).
type projects interface {
	Project(name string) httpapi.Project
	PutSettings(ctx context.Context, project string, ps dynamo.ProjectSettings) error
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

const invokeCommand = `aws lambda invoke --function-name "$DONT_API_FUNCTION" --cli-binary-format raw-in-base64-out --payload `

var (
	createTokenStep = errs.Step{
		Command:     invokeCommand + `'{"dont_operator":{"create_token":{"project":"<project>","role":"admin"}}}' /dev/stdout`,
		Description: "create a project's token: project is required; role is admin (default), harness or approver",
	}
	setProjectStep = errs.Step{
		Command:     invokeCommand + `'{"dont_operator":{"set_project":{"project":"<project>","spawn_timeout":"2h"}}}' /dev/stdout`,
		Description: "set a project's spawn timeout (a Go duration, 1s to 720h)",
	}
)

// maxSpawnTimeout bounds a project's spawn timeout (30 days).
const maxSpawnTimeout = 720 * time.Hour

func operate(ctx context.Context, backend projects, op operatorEvent, log *slog.Logger) json.RawMessage {
	if op.Operator.SetProject != nil {
		return setProject(ctx, backend, op, log)
	}
	in := op.Operator.CreateToken
	if in == nil {
		return failure(errs.E(errs.InvalidArgument, "unknown operator action: the actions are create_token and set_project", createTokenStep, setProjectStep).
			Unmet("dont_operator.create_token or dont_operator.set_project"))
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
	p := backend.Project(in.Project)
	// This is what creates a project: its callback secret is made here,
	// and only here (authenticating a request only ever reads it). A bad
	// role is Credentials.Create's error, before anything is written.
	if auth.ValidRole(role) {
		if err := createSecret(ctx, p.Service); err != nil {
			return failure(err)
		}
	}
	res, err := tools.CreatedToken(p.Service.Credentials.Create(ctx, role, name))
	if err != nil {
		return failure(err)
	}
	log.InfoContext(ctx, "operator", "action", "create_token", "project", in.Project, "role", role)
	return success(res)
}

// createSecret makes the project's callback secret unless it has one.
func createSecret(ctx context.Context, svc *service.Service) error {
	if svc.Tokens == nil {
		return errs.E(service.TokensDisabled, "this store keeps no tokens")
	}
	if _, err := svc.Tokens.CreateProjectSecret(ctx); err != nil {
		return errs.E(errs.StoreError, "cannot create the project's callback secret: "+err.Error()).Wrap(err)
	}
	return nil
}

func setProject(ctx context.Context, backend projects, op operatorEvent, log *slog.Logger) json.RawMessage {
	in := op.Operator.SetProject
	if in.Project == "" {
		return failure(errs.E(errs.InvalidArgument, "set_project needs a project", setProjectStep).Unmet("project must not be empty"))
	}
	d, err := time.ParseDuration(in.SpawnTimeout)
	if err != nil || d < time.Second || d > maxSpawnTimeout {
		return failure(errs.E(errs.InvalidArgument, fmt.Sprintf("spawn_timeout must be a Go duration from 1s to 720h, got %q", in.SpawnTimeout), setProjectStep).
			Unmet("1s <= spawn_timeout <= 720h"))
	}
	ps := dynamo.ProjectSettings{SpawnTimeout: d}
	if err := backend.PutSettings(ctx, in.Project, ps); err != nil {
		return failure(errs.E(errs.StoreError, "cannot store the project's settings: "+err.Error()).Wrap(err))
	}
	log.InfoContext(ctx, "operator", "action", "set_project", "project", in.Project, "spawn_timeout", d.String())
	return success(tools.Output{Kind: envelope.KindProjectSettings, Data: map[string]any{"project": in.Project, "spawn_timeout": d.String()},
		Hints: []string{"warm function instances apply it within a minute"}})
}

func success(res tools.Output) json.RawMessage {
	env, err := envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
	if err != nil {
		return failure(errs.E(errs.Internal, "cannot encode the result").Wrap(err))
	}
	return envelope.Marshal(env)
}

func failure(err error) json.RawMessage {
	return envelope.Marshal(envelope.Fail(err, nil))
}
