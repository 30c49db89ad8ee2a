package service

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// Auth error codes: exit 3 on the CLI (like other state errors), 401/403 over HTTP.
const (
	Unauthenticated errs.Code = "unauthenticated"
	Forbidden       errs.Code = "forbidden"
	RateLimited     errs.Code = "rate-limited"
	TokensDisabled  errs.Code = "tokens-unavailable"
)

// TokenView is a token as listed: never its secret.
type TokenView struct {
	auth.Token
	// Secret is present only in the response that created the token.
	Secret string `json:"token,omitempty"`
}

func (s *core) tokens() (store.TokenStore, error) {
	if s.Tokens == nil {
		return nil, errs.E(TokensDisabled, "this store keeps no tokens")
	}
	return s.Tokens, nil
}

// Create makes a bearer token; its secret is returned once.
func (s *Credentials) Create(ctx context.Context, role, name string) (TokenView, error) {
	return s.CreateKeyed(ctx, role, name, nil)
}

// CreateKeyed is Create with the call's Idempotency-Key, committed with
// the token (nil: none).
func (s *Credentials) CreateKeyed(ctx context.Context, role, name string, key *idempotency.Pending) (TokenView, error) {
	ts, err := s.tokens()
	if err != nil {
		return TokenView{}, err
	}
	if !auth.ValidRole(role) {
		return TokenView{}, errs.E(errs.InvalidArgument, "unknown role "+quoteID(role)).Unmet("role is one of harness, approver, admin")
	}
	secret, err := auth.NewSecret()
	if err != nil {
		return TokenView{}, errs.E(errs.Internal, "no randomness").Wrap(err)
	}
	now := s.now()
	t := auth.Token{ID: s.newID(ids.Token, now), Role: role, Name: name, Hash: auth.Hash(secret), CreatedAt: now}
	view := TokenView{Token: t, Secret: auth.BearerString(t.ID, secret)}
	var keyed func(*idempotency.Put) error
	if k := keyedPuts(ts); k != nil {
		keyed = func(put *idempotency.Put) error { return k.PutTokenKeyed(ctx, t, put) }
	}
	if err := s.putKeyed(key, view, func() error { return ts.PutToken(ctx, t) }, keyed); err != nil {
		return TokenView{}, storeErr(err)
	}
	return view, nil
}

// TokenList is what ListTokens returns.
type TokenList struct {
	Count  int          `json:"count"`
	Tokens []auth.Token `json:"tokens"`
}

// List lists the project's bearer tokens (never their secrets).
func (s *Credentials) List(ctx context.Context) (TokenList, error) {
	ts, err := s.tokens()
	if err != nil {
		return TokenList{}, err
	}
	list, err := ts.ListTokens(ctx)
	if err != nil {
		return TokenList{}, storeErr(err)
	}
	if list == nil {
		list = []auth.Token{}
	}
	return TokenList{Count: len(list), Tokens: list}, nil
}

// Revoke revokes a token at once.
func (s *Credentials) Revoke(ctx context.Context, id string) (TokenView, error) {
	ts, err := s.tokens()
	if err != nil {
		return TokenView{}, err
	}
	if ids.Kind(id) != ids.Token {
		return TokenView{}, errs.E(errs.InvalidID, "not a token id: "+quoteID(id)).Unmet("token ids look like tok:<ULID>")
	}
	if err := ts.RevokeToken(ctx, id, s.now()); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return TokenView{}, errs.E(errs.NotFound, "no such token "+id).On(id)
		}
		return TokenView{}, storeErr(err)
	}
	s.dropHeldCalls(ctx, id)
	t, err := ts.GetToken(ctx, id)
	if err != nil {
		return TokenView{}, storeErr(err)
	}
	return TokenView{Token: t}, nil
}

// Authenticate resolves a presented token to a principal.
func (s *Credentials) Authenticate(ctx context.Context, presented string) (auth.Principal, error) {
	ts, err := s.tokens()
	if err != nil {
		return auth.Principal{}, err
	}
	if presented == "" {
		return auth.Principal{}, errs.E(Unauthenticated, "no bearer token")
	}
	if auth.IsCallback(presented) {
		// Reads only: a project without a secret issued no callback token.
		secret, err := callbackSecret(ctx, ts, auth.CallbackKeyID(presented))
		if errors.Is(err, store.ErrNotFound) {
			return auth.Principal{}, errs.E(Unauthenticated, "invalid callback token")
		}
		if err != nil {
			return auth.Principal{}, storeErr(err)
		}
		rid, ok := auth.ParseCallbackKeyed(func(string) ([]byte, bool) { return secret, true }, presented)
		if !ok {
			return auth.Principal{}, errs.E(Unauthenticated, "invalid callback token")
		}
		return auth.Principal{Role: auth.RoleCallback, RequestID: rid}, nil
	}
	if auth.IsPasskeySession(presented) {
		return s.passkeySession(ctx, ts, presented)
	}
	id, secret, ok := auth.ParseBearer(presented)
	if !ok {
		return auth.Principal{}, errs.E(Unauthenticated, "malformed bearer token")
	}
	t, err := ts.GetToken(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return auth.Principal{}, storeErr(err)
	}
	// Compare even when the id is unknown, so timing says nothing about ids.
	if !auth.Matches(secret, t.Hash) || err != nil {
		return auth.Principal{}, errs.E(Unauthenticated, "unknown or wrong bearer token")
	}
	if t.RevokedAt != nil {
		return auth.Principal{}, errs.E(Unauthenticated, "the token was revoked")
	}
	return auth.Principal{Role: t.Role, TokenID: t.ID, Project: t.Project}, nil
}

// HeartbeatTool is the tool a callback token may call on its own spawn
// beside allowed_tools: the harness keeps the spawn alive with it while
// the subagent works. It is not in allowed_tools, so a harness enforcing
// forbidden_tools keeps it from the subagent itself.
const HeartbeatTool = "spawns.heartbeat"

// CheckCallback decides whether a callback token may make this call: only
// the spawn's own callback actions (its allowed_tools, by construction) on
// its own entity. A terminal action must name the token's request id, so
// that it resolves the spawn rather than acting beside it. While the spawn
// is pending every allowed tool may run; once it resolved, only a retry of
// a terminal action on its own entity and request may (the service answers
// it with the duplicate warning and changes nothing), and anything else is
// refused. A heartbeat (HeartbeatTool) of its own spawn is allowed too,
// pending or not (a late one warns and changes nothing).
func (s *Credentials) CheckCallback(ctx context.Context, p auth.Principal, tool string, args map[string]any) error {
	// A heartbeat rewrites the spawn's request: it reads the whole spawn.
	// Any other call names the entity, and its own (callbackSpawn).
	named, _ := args["id"].(string)
	if tool == HeartbeatTool {
		named = ""
	}
	sp, err := s.callbackSpawn(ctx, p.RequestID, named)
	if err != nil {
		return errs.E(Forbidden, "the callback token's spawn is unknown")
	}
	if tool == HeartbeatTool {
		// The harness running the subagent keeps its own spawn alive with
		// the spawn's token; never another's. Resolved, the heartbeat is
		// let through to warn that it changed nothing.
		if rid, _ := args["request_id"].(string); rid != sp.ID {
			return errs.E(Forbidden, "a callback token of "+sp.ID+" heartbeats only that spawn: pass request_id "+sp.ID).
				Unmet("request_id = "+sp.ID).With("tool", tool).With("request", sp.ID)
		}
		return nil
	}
	allowed := false
	for _, t := range spawn.AllowedTools(sp.Kind) {
		allowed = allowed || t == tool
	}
	if !allowed {
		return errs.E(Forbidden, "a callback token of "+sp.ID+" may only call "+joinList(spawn.AllowedTools(sp.Kind))).Unmet("tool in allowed_tools")
	}
	terminal := false
	for _, t := range spawn.CallbackActions(sp.Kind) {
		terminal = terminal || t == tool
	}
	if terminal {
		if rid, _ := args["request_id"].(string); rid != sp.ID {
			return errs.E(Forbidden, "a callback token of "+sp.ID+" resolves only that spawn: pass request_id "+sp.ID).
				Unmet("request_id = "+sp.ID).With("tool", tool).With("request", sp.ID)
		}
	}
	if sp.Kind != spawn.Guess {
		if id, _ := args["id"].(string); id != sp.EntityID {
			return errs.E(Forbidden, "a callback token of "+sp.ID+" acts only on "+sp.EntityID).Unmet("id = " + sp.EntityID)
		}
	}
	if sp.State != spawn.Pending && !terminal {
		return errs.E(Forbidden, "the callback token of "+sp.ID+" ended with its resolution ("+string(sp.Outcome)+")").
			Unmet("spawn pending").With("entity", sp.EntityID)
	}
	return nil
}

// publicRequest is the payload a caller receives: the stored request, with
// its callback token only withToken (at issue, to the principal that
// asked) and when the store keeps a project secret. Only an
// authenticated caller gets here; a project made before its operator
// action created the secret gets one now.
func (s *core) publicRequest(ctx context.Context, req spawn.Request, withToken bool) (json.RawMessage, error) {
	token := ""
	if withToken {
		var err error
		if token, err = s.callbackToken(ctx, req.RequestID); err != nil {
			return nil, err
		}
	}
	return s.payload(req, token)
}

// callbackToken is the callback token of spawn requestID ("" when the
// service issues none).
func (s *core) callbackToken(ctx context.Context, requestID string) (string, error) {
	if s.Tokens == nil {
		return "", nil
	}
	keyID, secret, err := issuingSecret(ctx, s.Tokens)
	if err != nil {
		return "", storeErr(err)
	}
	// In a store shared by many projects the token names its own; with
	// rotating secrets, also the version it is made under.
	return auth.CallbackTokenKeyed(secret, s.Project, keyID, requestID), nil
}

// payload is req as a harness receives it, with token as its callback
// token and every tool of the surface not allowed listed as forbidden.
func (s *core) payload(req spawn.Request, token string) (json.RawMessage, error) {
	if req.Context.ForbiddenTools == nil {
		req = req.Forbidding(s.ToolNames)
	}
	req.Callback.Token = token
	b, err := requestJSON(req)
	if err != nil {
		return nil, errs.E(errs.Internal, "encode spawn request").Wrap(err)
	}
	return b, nil
}

func joinList(l []string) string {
	out := ""
	for i, x := range l {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// callbackSecret is the secret a callback token naming keyID verifies
// under: the store's one secret, or that version of a rotating one.
func callbackSecret(ctx context.Context, ts store.TokenStore, keyID string) ([]byte, error) {
	rs, rotating := ts.(store.RotatingSecrets)
	if !rotating {
		if keyID != "" {
			return nil, store.ErrNotFound
		}
		return ts.ProjectSecret(ctx)
	}
	if keyID == "" {
		keyID = store.FirstSecretVersion
	}
	return rs.SecretVersion(ctx, keyID)
}

// issuingSecret is the secret (and its version, "" for a store whose
// secret does not rotate) new callback tokens are made under; a project
// made before its operator action created the secret gets one now.
func issuingSecret(ctx context.Context, ts store.TokenStore) (keyID string, secret []byte, err error) {
	rs, rotating := ts.(store.RotatingSecrets)
	if !rotating {
		secret, err = ts.ProjectSecret(ctx)
		if errors.Is(err, store.ErrNotFound) {
			secret, err = ts.CreateProjectSecret(ctx)
		}
		return "", secret, err
	}
	keyID, secret, err = rs.CurrentSecret(ctx)
	if errors.Is(err, store.ErrNotFound) {
		if _, err = ts.CreateProjectSecret(ctx); err == nil {
			keyID, secret, err = rs.CurrentSecret(ctx)
		}
	}
	return keyID, secret, err
}
