package service

import "context"

// Caller is who an API request acts for: the token's id and role. Embedded
// callers (the CLI on the project's own file) have none.
type Caller struct {
	ID   string
	Role string
}

type callerKey struct{}

// WithCaller records the authenticated caller of a request.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerOf returns the request's caller, if the request came through the API.
func CallerOf(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}
