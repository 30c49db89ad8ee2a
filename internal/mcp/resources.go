package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Pending spawns and open questions are MCP resources, so that a host can
// show them and learn when they change without polling tools:
//
//	dont://spawns/pending        the pending spawns (the spawns tool, pending)
//	dont://approvals/open        the open questions (approvals_list, pending)
//	dont://spawns/{request_id}   one spawn (spawns_manage, op show)
//	dont://approvals/{id}        one question (approvals_show)
//
// A read is exactly the tool call it names, run as the harness principal
// every MCP call runs as: it returns the same envelope and shows no more
// than the tool would (no callback token, no approver view; docs/security.md).
// resources/subscribe watches a resource: the server reads it every
// resourcePoll (across processes the store is the only source of truth)
// and sends notifications/resources/updated when what it shows changes,
// ignoring what changes on every read (the time left, the call's meta).

// resourcePoll is how often a subscribed resource is read again.
var resourcePoll = time.Second

// maxWatches bounds the resources one server watches at a time: each is
// a store read every resourcePoll, and a client must not turn
// subscriptions into load on the store (docs/security.md).
const maxWatches = 32

// Resource URIs.
const (
	URIPendingSpawns  = "dont://spawns/pending"
	URIOpenQuestions  = "dont://approvals/open"
	uriSpawnPrefix    = "dont://spawns/"
	uriApprovalPrefix = "dont://approvals/"
	resourceMIME      = "application/json"
)

// resourceCall is the tool call that reads uri, or ok false.
func resourceCall(uri string) (tool string, args map[string]any, ok bool) {
	switch {
	case uri == URIPendingSpawns:
		return "spawns", map[string]any{"pending": true}, true
	case uri == URIOpenQuestions:
		return "approvals.list", map[string]any{"pending": true}, true
	case strings.HasPrefix(uri, uriSpawnPrefix) && len(uri) > len(uriSpawnPrefix):
		return "spawns.manage", map[string]any{"op": "show", "request_id": strings.TrimPrefix(uri, uriSpawnPrefix)}, true
	case strings.HasPrefix(uri, uriApprovalPrefix) && len(uri) > len(uriApprovalPrefix):
		return "approvals.show", map[string]any{"id": strings.TrimPrefix(uri, uriApprovalPrefix)}, true
	}
	return "", nil, false
}

// addResources registers the resources and their templates.
func (s *Server) addResources() {
	read := func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		b, err := s.readResource(ctx, req.Params.URI)
		if err != nil {
			return nil, err
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: resourceMIME, Text: string(b)}}}, nil
	}
	s.srv.AddResource(&sdk.Resource{URI: URIPendingSpawns, Name: "pending-spawns", Title: "Pending spawns", MIMEType: resourceMIME,
		Description: "The spawn requests still waiting for their callback, oldest first (the spawns tool with pending)."}, read)
	s.srv.AddResource(&sdk.Resource{URI: URIOpenQuestions, Name: "open-questions", Title: "Open questions", MIMEType: resourceMIME,
		Description: "The escalations still waiting for a person's answer (approvals_list with pending)."}, read)
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: uriSpawnPrefix + "{+request_id}", Name: "spawn", Title: "A spawn request", MIMEType: resourceMIME,
		Description: "One spawn request (spawns_manage with op show)."}, read)
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: uriApprovalPrefix + "{+id}", Name: "question", Title: "A question", MIMEType: resourceMIME,
		Description: "One escalation and its verdict (approvals_show)."}, read)
}

// readResource runs uri's tool call as the caller and returns its envelope.
// A read the tool refuses is refused the same way.
func (s *Server) readResource(ctx context.Context, uri string) ([]byte, error) {
	name, args, ok := resourceCall(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	t, found := tools.Lookup(name)
	if !found || !t.ForPrincipal(Principal("")) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	svc, release, err := s.open(ctx, t)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx = service.WithPrincipal(ctx, Principal(svc.Author))
	start := time.Now()
	res, err := tools.CallGated(ctx, svc, t.Name, args, confirm.Arrival{})
	var env envelope.Envelope
	if err == nil {
		env, err = envelope.New(res.Kind, res.Data, res.Warnings, res.Hints)
		if err != nil {
			err = errs.E(errs.Internal, "cannot encode the result").Wrap(err)
		}
	}
	if err != nil {
		// The refusal as the tool gives it: an error envelope, readable.
		env = envelope.Fail(err, res.Warnings)
	}
	env.Meta = envelope.Meta{DurationMS: time.Since(start).Milliseconds()}
	return bytes.TrimSuffix(envelope.Marshal(env), []byte("\n")), nil
}

// watches are the subscribed resources of a server, each read again every
// resourcePoll while at least one session subscribes.
type watches struct {
	mu   sync.Mutex
	base context.Context // the server's run; watches end with it
	by   map[string]*watch
}

type watch struct {
	subscribers int
	stop        context.CancelFunc
}

func (s *Server) subscribe(_ context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	if _, _, ok := resourceCall(uri); !ok {
		return sdk.ResourceNotFoundError(uri)
	}
	s.watches.mu.Lock()
	defer s.watches.mu.Unlock()
	if s.watches.by == nil {
		s.watches.by = map[string]*watch{}
	}
	if w, ok := s.watches.by[uri]; ok {
		w.subscribers++
		return nil
	}
	if len(s.watches.by) >= maxWatches {
		return errors.New("at most " + strconv.Itoa(maxWatches) + " resources are watched at a time; unsubscribe from one first")
	}
	base := s.watches.base
	if base == nil {
		base = context.Background()
	}
	ctx, stop := context.WithCancel(base)
	s.watches.by[uri] = &watch{subscribers: 1, stop: stop}
	// The first read is the state a change is measured from.
	first := s.fingerprint(ctx, uri)
	go s.watch(ctx, uri, first)
	return nil
}

func (s *Server) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	s.watches.mu.Lock()
	defer s.watches.mu.Unlock()
	if w, ok := s.watches.by[req.Params.URI]; ok {
		if w.subscribers--; w.subscribers <= 0 {
			w.stop()
			delete(s.watches.by, req.Params.URI)
		}
	}
	return nil
}

func (s *Server) watch(ctx context.Context, uri string, last [32]byte) {
	tick := time.NewTicker(resourcePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if cur := s.fingerprint(ctx, uri); cur != last {
			last = cur
			// Best effort: a notification that cannot be sent changes nothing.
			_ = s.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}

// fingerprint is what a resource shows, without what changes on every
// read: the call's meta and the time left of open questions.
func (s *Server) fingerprint(ctx context.Context, uri string) [32]byte {
	b, err := s.readResource(ctx, uri)
	if err != nil {
		return sha256.Sum256([]byte("error: " + err.Error()))
	}
	var env map[string]any
	if json.Unmarshal(b, &env) != nil {
		return sha256.Sum256(b)
	}
	delete(env, "meta")
	stripVolatile(env)
	norm, _ := json.Marshal(env)
	return sha256.Sum256(norm)
}

// volatile are fields that change with the clock alone.
var volatile = map[string]bool{"remaining_ms": true}

func stripVolatile(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if volatile[k] {
				delete(x, k)
				continue
			}
			stripVolatile(e)
		}
	case []any:
		for _, e := range x {
			stripVolatile(e)
		}
	}
}
