package deployment

import (
	"context"
	"errors"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// Reindexer is a store whose list indexes can be backfilled on items
// written before them (internal/store/dynamo).
type Reindexer interface {
	Reindex(ctx context.Context, opt dynamo.ReindexOptions) (dynamo.ReindexReport, error)
}

// ReindexStep is the invoke that runs (or continues) a project's reindex.
var ReindexStep = errs.Step{
	Command:     `aws lambda invoke --function-name "$DONT_OPERATOR_FUNCTION" --cli-binary-format raw-in-base64-out --payload '{"dont_operator":{"reindex":{"project":"<project>"}}}' /dev/stdout`,
	Description: "backfill the project's list indexes (after an upgrade from a version without them); while the answer says done false, invoke again with its cursor",
}

// Reindex backfills the list indexes of a project's items written before
// them (dynamo.Store.Reindex), from cursor ("": the start), until stop
// says the invocation's time is spent: the answer then says done false
// and carries the cursor to pass back. An unknown project is not_found, a
// cursor this project's reindex did not answer invalid_argument; neither
// writes anything.
func Reindex(ctx context.Context, svc *service.Service, cursor string, stop func() bool) (dynamo.ReindexReport, error) {
	st, ok := svc.Tokens.(Reindexer)
	if !ok {
		return dynamo.ReindexReport{}, errs.E(errs.InvalidArgument, "this store has no list indexes to backfill: only the DynamoDB store has them").
			Unmet("reindex applies to a deployment's DynamoDB table")
	}
	rep, err := st.Reindex(ctx, dynamo.ReindexOptions{Cursor: cursor, Stop: stop})
	switch {
	case errors.Is(err, dynamo.ErrBadCursor):
		return rep, errs.E(errs.InvalidArgument, "not a reindex cursor of this project", ReindexStep).With("project", svc.Project).
			Unmet("cursor must be the one the project's previous reindex answered, or absent to start from the beginning")
	case errors.Is(err, store.ErrNotFound):
		return rep, errs.E(errs.NotFound, "the project has nothing stored: no entity, settings or secret", errs.Step{
			Command:     `aws lambda invoke --function-name "$DONT_OPERATOR_FUNCTION" --cli-binary-format raw-in-base64-out --payload '{"dont_operator":{"create_token":{"project":"<project>"}}}' /dev/stdout`,
			Description: "check the project's name; a project exists once its first token is made, and one created with this version needs no reindex",
		}).With("project", svc.Project)
	case err != nil:
		return rep, errs.E(errs.StoreError, "cannot reindex the project; what was fixed stays fixed, and a rerun from the last cursor continues", ReindexStep).
			With("project", svc.Project).Wrap(err)
	}
	return rep, nil
}
