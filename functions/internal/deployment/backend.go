package deployment

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// Backend is the httpapi.Backend of many projects sharing one table. A
// presented token leads to its project: a bearer token through a global
// item (T#<token id>), a callback token by naming it; the project's
// own service then checks the token: the bearer secret against the stored
// hash, the callback token's MAC against the project's secret. A token
// of one project therefore only ever reaches that project's store.
// Checking a token only reads: a request that fails it writes nothing
// (a project's secret is made by the operator action that creates it).
type Backend struct {
	client  *dynamodb.Client
	table   string
	service func(st *dynamo.Store) *service.Service
	lookup  *dynamo.Store // reads the global items; its own project is never used
	// sealer seals and opens project secrets (KMS); nil keeps them as stored.
	sealer dynamo.Sealer

	// The projects this process has served, most recently used first:
	// only projects a request authenticated to (or an operator named)
	// enter, and the least recently used leaves when it is full, so
	// tokens naming made-up projects can neither grow it nor empty it.
	mu        sync.Mutex
	projects  map[string]*list.Element // of *cachedProject
	recent    *list.List
	maxCached int
}

type cachedProject struct {
	name string
	httpapi.Project
	built time.Time
}

// maxCachedProjects bounds the per-process cache of project services.
const maxCachedProjects = 1024

// projectRefresh is how long a process keeps a project's service before
// building it again: a project's settings (service.SetProjectSettings)
// reach every warm function instance within it.
const projectRefresh = time.Minute

// NewBackend returns the backend of every project in table. newService
// builds a project's service around that project's store (the wiring sets
// Store and Tokens to st, and the clock, scheduler, timeout and logger
// it wants); it is called once per project and process, after a request
// authenticated to the project.
func NewBackend(client *dynamodb.Client, table string, newService func(st *dynamo.Store) *service.Service) *Backend {
	return &Backend{client: client, table: table, service: newService, lookup: dynamo.New(client, table, ""),
		projects: map[string]*list.Element{}, recent: list.New(), maxCached: maxCachedProjects}
}

// Project returns the service and idempotency store of a project, and
// keeps it: for callers that name a real project (the operator).
func (b *Backend) Project(name string) httpapi.Project {
	if p, ok := b.cached(name); ok {
		return p
	}
	return b.keep(name, b.build(b.open(name)))
}

// open is a project's store, sealing its secrets when the deployment does.
func (b *Backend) open(project string) *dynamo.Store {
	st := dynamo.New(b.client, b.table, project)
	if b.sealer != nil {
		st.SetSealer(b.sealer)
	}
	return st
}

func (b *Backend) build(st *dynamo.Store) httpapi.Project {
	return httpapi.Project{Service: b.service(st), Idempotency: st}
}

// cached is the kept project name if it is fresh, now the most recent.
func (b *Backend) cached(name string) (httpapi.Project, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.projects[name]
	if !ok || time.Since(e.Value.(*cachedProject).built) >= projectRefresh {
		return httpapi.Project{}, false
	}
	b.recent.MoveToFront(e)
	return e.Value.(*cachedProject).Project, true
}

// keep caches p as name's project, evicting the least recently used
// project if the cache is full.
func (b *Backend) keep(name string, p httpapi.Project) httpapi.Project {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &cachedProject{name: name, Project: p, built: time.Now()}
	if e, ok := b.projects[name]; ok {
		e.Value = c
		b.recent.MoveToFront(e)
		return p
	}
	for b.recent.Len() >= b.maxCached {
		oldest := b.recent.Back()
		b.recent.Remove(oldest)
		delete(b.projects, oldest.Value.(*cachedProject).name)
	}
	b.projects[name] = b.recent.PushFront(c)
	return p
}

// Refresh forgets the service kept for project, so that this process
// builds it again on its next request: after an operator changed the
// project's settings, this process applies them at once, the others
// within projectRefresh.
func (b *Backend) Refresh(project string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.projects[project]; ok {
		b.recent.Remove(e)
		delete(b.projects, project)
	}
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
	// A project this process keeps checks the token with its service; any
	// other with a bare service over its store (reads only), and its own
	// service is built and kept only once the token passed.
	p, warm := b.cached(project)
	var st *dynamo.Store
	check := p.Service
	if !warm {
		st = b.open(project)
		check = service.New(service.Deps{Tokens: st, Project: project})
	}
	principal, err := check.Credentials.Authenticate(ctx, presented)
	if err != nil {
		return auth.Principal{}, httpapi.Project{}, err
	}
	if !warm {
		p = b.keep(project, b.build(st))
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
	project, err := b.lookup.TokenProject(ctx, id)
	if err != nil {
		return "", storeErr(err)
	}
	if project == "" {
		// Hash anyway, so that timing says little about which ids exist.
		auth.Matches(secret, "")
		return "", errs.E(service.Unauthenticated, "unknown or wrong bearer token")
	}
	return project, nil
}

func storeErr(err error) error {
	return errs.E(errs.StoreError, "the store failed: "+err.Error()).Wrap(err)
}

var _ httpapi.Backend = (*Backend)(nil)
