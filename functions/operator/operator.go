package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/dont-cli/dont/functions/internal/deployment"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/tools"
)

// operatorEvent is what an operator sends by invoking this function
// (aws lambda invoke): IAM decides who may; nothing routes a request here,
// and the public api function refuses the event. It makes a project's first token, which nothing else can: the
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
			Project       string `json:"project"`
			SpawnTimeout  string `json:"spawn_timeout"`
			SpawnMaxLease string `json:"spawn_max_lease"`
		} `json:"set_project"`
		// RotateSecret makes a new version of the project's callback
		// secret (sealed by KMS); tokens already issued keep verifying.
		RotateSecret *struct {
			Project string `json:"project"`
		} `json:"rotate_secret"`
		// RetireSecrets removes the versions of the project's callback
		// secret older than its spawn_max_lease (deployment.RetireSecrets).
		RetireSecrets *struct {
			Project string `json:"project"`
		} `json:"retire_secrets"`
		// Reindex backfills the project's list indexes on items written
		// before them (deployment.Reindex); Cursor continues a run that
		// answered done false.
		Reindex *struct {
			Project string `json:"project"`
			Cursor  string `json:"cursor"`
		} `json:"reindex"`
	} `json:"dont_operator"`
}

// projects opens a project's service and keeps it (deployment.Backend
// does); Refresh forgets it, so that new settings apply at once.
type projects interface {
	Project(name string) httpapi.Project
	Refresh(name string)
}

// newFunction is the Lambda handler: an operator event in, an envelope
// out; any other event is refused with the actions it could have been.
func newFunction(backend projects, log *slog.Logger) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var op operatorEvent
		if err := json.Unmarshal(raw, &op); err != nil || op.Operator == nil {
			return failure(errs.E(errs.InvalidArgument, "not an operator event: the operator function takes {\"dont_operator\":{…}} only",
				createTokenStep, setProjectStep, rotateSecretStep, retireSecretsStep, deployment.ReindexStep).Unmet(actionsUnmet)), nil
		}
		return operate(ctx, backend, op, log), nil
	}
}

const actionsUnmet = "dont_operator.create_token, dont_operator.set_project, dont_operator.rotate_secret, dont_operator.retire_secrets or dont_operator.reindex"

const invokeCommand = `aws lambda invoke --function-name "$DONT_OPERATOR_FUNCTION" --cli-binary-format raw-in-base64-out --payload `

var (
	createTokenStep = errs.Step{
		Command:     invokeCommand + `'{"dont_operator":{"create_token":{"project":"<project>","role":"admin"}}}' /dev/stdout`,
		Description: "create a project's token: project is required; role is admin (default), harness or approver",
	}
	rotateSecretStep = errs.Step{
		Command:     invokeCommand + `'{"dont_operator":{"rotate_secret":{"project":"<project>"}}}' /dev/stdout`,
		Description: "rotate a project's callback secret: new spawns get tokens under the new version, issued ones keep working",
	}
	retireSecretsStep = errs.Step{
		Command:     invokeCommand + `'{"dont_operator":{"retire_secrets":{"project":"<project>"}}}' /dev/stdout`,
		Description: "retire a project's secret versions replaced longer ago than its spawn_max_lease: their tokens stop verifying",
	}
	setProjectStep = errs.Step{
		Command:     invokeCommand + `'{"dont_operator":{"set_project":{"project":"<project>","spawn_timeout":"2h"}}}' /dev/stdout`,
		Description: "set a project's spawn timeout (" + settings.SpawnTimeout.Rule() + ")",
	}
)

// operate runs an operator action: the service's operation on the named
// project (CreateOperatorToken, SetProjectSettings), which holds every
// rule; this decodes, routes to the project, and encodes.
func operate(ctx context.Context, backend projects, op operatorEvent, log *slog.Logger) json.RawMessage {
	switch {
	case op.Operator.SetProject != nil:
		in := op.Operator.SetProject
		if in.Project == "" {
			return failure(errs.E(errs.InvalidArgument, "set_project needs a project", setProjectStep).Unmet("project must not be empty"))
		}
		view, err := backend.Project(in.Project).Service.SetProjectSettings(ctx, service.ProjectSettingsInput{SpawnTimeout: in.SpawnTimeout, SpawnMaxLease: in.SpawnMaxLease})
		if err != nil {
			return failure(err, setProjectStep)
		}
		backend.Refresh(in.Project)
		log.InfoContext(ctx, "operator", "action", "set_project", "project", in.Project, "spawn_timeout", view.SpawnTimeout, "spawn_max_lease", view.SpawnMaxLease)
		return success(tools.Output{Kind: envelope.KindProjectSettings, Data: view, Hints: []string{"warm function instances apply it within a minute"}})
	case op.Operator.RotateSecret != nil:
		in := op.Operator.RotateSecret
		if in.Project == "" {
			return failure(errs.E(errs.InvalidArgument, "rotate_secret needs a project", rotateSecretStep).Unmet("project must not be empty"))
		}
		view, err := backend.Project(in.Project).Service.Credentials.RotateProjectSecret(ctx)
		if err != nil {
			return failure(err, rotateSecretStep)
		}
		log.InfoContext(ctx, "operator", "action", "rotate_secret", "project", in.Project, "key_id", view.KeyID)
		return success(tools.Output{Kind: envelope.KindSecretRotation, Data: view,
			Hints: []string{"callback tokens issued before keep verifying under " + view.Previous}})
	case op.Operator.RetireSecrets != nil:
		in := op.Operator.RetireSecrets
		if in.Project == "" {
			return failure(errs.E(errs.InvalidArgument, "retire_secrets needs a project", retireSecretsStep).Unmet("project must not be empty"))
		}
		svc := backend.Project(in.Project).Service
		now := time.Now
		if svc.Clock != nil {
			now = svc.Clock
		}
		view, err := deployment.RetireSecrets(ctx, svc, now())
		if err != nil {
			log.InfoContext(ctx, "operator", "action", "retire_secrets", "project", in.Project, "refused", errs.As(err).Code)
			return failure(err, retireSecretsStep)
		}
		backend.Refresh(in.Project)
		log.InfoContext(ctx, "operator", "action", "retire_secrets", "project", in.Project, "retired", len(view.Retired), "kept", len(view.Kept))
		hints := []string{"callback tokens made under a retired version are refused from now on"}
		if len(view.Retired) == 0 {
			hints = []string{"no version older than the current one is kept"}
		}
		return success(tools.Output{Kind: envelope.KindSecretRotation, Data: view, Hints: hints})
	case op.Operator.Reindex != nil:
		in := op.Operator.Reindex
		if in.Project == "" {
			return failure(errs.E(errs.InvalidArgument, "reindex needs a project", deployment.ReindexStep).Unmet("project must not be empty"))
		}
		view, err := deployment.Reindex(ctx, backend.Project(in.Project).Service, in.Cursor, reindexBudget(ctx, time.Now))
		if err != nil {
			log.InfoContext(ctx, "operator", "action", "reindex", "project", in.Project, "refused", errs.As(err).Code)
			return failure(err)
		}
		log.InfoContext(ctx, "operator", "action", "reindex", "project", in.Project, "examined", view.Examined, "fixed", view.Fixed, "done", view.Done)
		hint := "every item of the project is indexed; the lists read what they return"
		if !view.Done {
			hint = "not done: invoke reindex again with this cursor"
		}
		return success(tools.Output{Kind: envelope.KindProjectSettings, Data: view, Hints: []string{hint}})
	case op.Operator.CreateToken != nil:
		in := op.Operator.CreateToken
		if in.Project == "" {
			return failure(errs.E(errs.InvalidArgument, "create_token needs a project", createTokenStep).Unmet("project must not be empty"))
		}
		view, err := backend.Project(in.Project).Service.Credentials.CreateOperatorToken(ctx, service.OperatorTokenInput{Role: in.Role, Name: in.Name})
		res, err := tools.CreatedToken(view, err)
		if err != nil {
			return failure(err, createTokenStep)
		}
		log.InfoContext(ctx, "operator", "action", "create_token", "project", in.Project, "role", view.Role)
		return success(res)
	}
	return failure(errs.E(errs.InvalidArgument, "unknown operator action: the actions are create_token, set_project, rotate_secret, retire_secrets and reindex",
		createTokenStep, setProjectStep, rotateSecretStep, retireSecretsStep, deployment.ReindexStep).
		Unmet(actionsUnmet))
}

// reindexSpare is the time a reindex leaves of its invocation, to answer
// with its cursor before Lambda ends the function; reindexBudget is its
// budget when the context has no deadline.
const (
	reindexSpare         = 15 * time.Second
	reindexDefaultBudget = 40 * time.Second
)

// reindexBudget says, between pages, whether a reindex should stop: once
// less than reindexSpare is left before ctx's deadline (or reindexDefaultBudget
// has passed since the call, without one), by now.
func reindexBudget(ctx context.Context, now func() time.Time) func() bool {
	end, ok := ctx.Deadline()
	if ok {
		end = end.Add(-reindexSpare)
	} else {
		end = now().Add(reindexDefaultBudget)
	}
	return func() bool { return !now().Before(end) }
}

func success(res tools.Output) json.RawMessage {
	env, err := envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
	if err != nil {
		return failure(errs.E(errs.Internal, "cannot encode the result").Wrap(err))
	}
	return envelope.Marshal(env)
}

// failure encodes err; an argument the operator got wrong is also told
// the invoke that sets it right (fix).
func failure(err error, fix ...errs.Step) json.RawMessage {
	e := errs.As(err)
	if e.Code == errs.InvalidArgument && len(fix) > 0 {
		withFix := *e
		withFix.Remediation = append(append([]errs.Step{}, fix...), e.Remediation...)
		e = &withFix
	}
	return envelope.Marshal(envelope.Fail(e, nil))
}
