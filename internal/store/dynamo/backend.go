package dynamo

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
)

// Backend is the httpapi.Backend of many projects sharing one table. A
// presented token leads to its project: a bearer token through a global
// item (T#<token id>), a callback token by naming it; the project's
// own service then checks the token: the bearer secret against the stored
// hash, the callback token's MAC against the project's secret. A token
// of one project therefore only ever reaches that project's store.
type Backend struct {
	client  *dynamodb.Client
	table   string
	service func(st *Store) *service.Service
	lookup  *Store // reads the global items; its own project is never used

	mu       sync.Mutex
	projects map[string]cachedProject
}

type cachedProject struct {
	httpapi.Project
	built time.Time
}

// maxCachedProjects bounds the per-process cache of project services.
const maxCachedProjects = 1024

// projectRefresh is how long a process keeps a project's service before
// building it again: a project's settings (PutSettings) reach every warm
// function instance within it.
const projectRefresh = time.Minute

// NewBackend returns the backend of every project in table. newService
// builds a project's service around that project's store (the wiring sets
// Store and Tokens to st, and the clock, scheduler, timeout and logger
// it wants); it is called once per project and process.
func NewBackend(client *dynamodb.Client, table string, newService func(st *Store) *service.Service) *Backend {
	return &Backend{client: client, table: table, service: newService, lookup: New(client, table, ""),
		projects: map[string]cachedProject{}}
}

// Project returns the service and idempotency store of a project.
func (b *Backend) Project(name string) httpapi.Project {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.projects[name]; ok && time.Since(p.built) < projectRefresh {
		return p.Project
	}
	if len(b.projects) >= maxCachedProjects {
		b.projects = map[string]cachedProject{}
	}
	st := New(b.client, b.table, name)
	p := httpapi.Project{Service: b.service(st), Idempotency: st}
	b.projects[name] = cachedProject{Project: p, built: time.Now()}
	return p
}

// PutSettings replaces a project's settings; this process applies them at
// once, the others within projectRefresh.
func (b *Backend) PutSettings(ctx context.Context, project string, ps ProjectSettings) error {
	if err := New(b.client, b.table, project).PutSettings(ctx, ps); err != nil {
		return err
	}
	b.mu.Lock()
	delete(b.projects, project)
	b.mu.Unlock()
	return nil
}

// Authenticate implements httpapi.Backend.
func (b *Backend) Authenticate(ctx context.Context, presented string) (auth.Principal, httpapi.Project, error) {
	if presented == "" {
		return auth.Principal{}, httpapi.Project{}, errs.E(service.Unauthenticated, "no bearer token")
	}
	project, err := b.owner(ctx, presented)
	if err != nil || project == "" {
		return auth.Principal{}, httpapi.Project{}, err
	}
	p := b.Project(project)
	principal, err := p.Service.Authenticate(ctx, presented)
	if err != nil {
		return auth.Principal{}, httpapi.Project{}, err
	}
	principal.Project = project
	return principal, p, nil
}

// owner finds the project a presented token belongs to, or fails with
// the error an unknown token gets.
func (b *Backend) owner(ctx context.Context, presented string) (string, error) {
	if auth.IsCallback(presented) {
		// The token names its project; that project's secret checks the MAC.
		if project := auth.CallbackProject(presented); project != "" {
			return project, nil
		}
		return "", errs.E(service.Unauthenticated, "invalid callback token")
	}
	id, secret, ok := auth.ParseBearer(presented)
	if !ok {
		return "", errs.E(service.Unauthenticated, "malformed bearer token")
	}
	it, err := b.lookup.readOnce(ctx, key(tokenPK(id), "T"))
	if err != nil {
		return "", storeErr(err)
	}
	if it == nil || attrString(it, "project") == "" {
		// Hash anyway, so that timing says little about which ids exist.
		auth.Matches(secret, "")
		return "", errs.E(service.Unauthenticated, "unknown or wrong bearer token")
	}
	return attrString(it, "project"), nil
}

func storeErr(err error) error {
	return errs.E(errs.StoreError, "the store failed: "+err.Error()).Wrap(err)
}

var _ httpapi.Backend = (*Backend)(nil)
