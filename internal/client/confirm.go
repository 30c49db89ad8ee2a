package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
)

// CallConfirmed posts a tool call whose body carries cli_confirmed: true
// when confirmed is set: the CLI asked a person (or got --yes) first. It
// is still one request; retries reuse its Idempotency-Key.
func (c *Client) CallConfirmed(ctx context.Context, tool string, args map[string]any, confirmed bool) (envelope.Envelope, error) {
	if args == nil { // "args" is an object: null is refused
		args = map[string]any{}
	}
	body := map[string]any{"args": args}
	if confirmed {
		body["cli_confirmed"] = true
	}
	b, err := json.Marshal(body)
	if err != nil {
		return envelope.Envelope{}, errs.E(errs.InvalidArgument, "cannot encode the arguments").Wrap(err)
	}
	return c.do(ctx, http.MethodPost, "/v1/tools/"+tool, b)
}
