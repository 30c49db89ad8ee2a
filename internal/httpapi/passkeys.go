package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
)

// The passkey sign-in of the approvals page (docs/approvals.md,
// "Passkeys"): the only calls that take no token, since the passkey is
// the credential. The finish answers a session credential that stands
// for the approver's token (auth.PasskeySession). A backend serves them
// when it knows its one project without a token (PublicProject):
// `dont serve`. The API function, whose project comes from the token,
// answers passkeys-unavailable and its page signs in with the token.

// PublicProject is a Backend that serves one project without a token.
type PublicProject interface {
	PublicProject() (Project, bool)
}

// PublicProject implements PublicProject.
func (b SingleProject) PublicProject() (Project, bool) { return b.Project, true }

// passkeySignInRequest is the body of POST /v1/passkeys/signin/finish.
type passkeySignInRequest struct {
	Challenge  string          `json:"challenge"`
	Credential json.RawMessage `json:"credential"`
}

func (s *server) passkeyProject(w http.ResponseWriter, r *http.Request) (Project, bool) {
	if s.total != nil {
		if wait, ok := s.total.allow(""); !ok {
			s.throttled(w, r, wait, "rate limit exceeded for this server")
			return Project{}, false
		}
	}
	pp, ok := s.opts.Backend.(PublicProject)
	var p Project
	if ok {
		p, ok = pp.PublicProject()
	}
	if !ok {
		s.fail(w, r, errs.E(service.PasskeysUnavailable, "this server signs in with an approver token only: its project is named by the token"))
		return Project{}, false
	}
	return p, true
}

func (s *server) passkeySignInBegin(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p, ok := s.passkeyProject(w, r)
	if !ok {
		return
	}
	ctx := service.WithPageOrigin(r.Context(), r.Header.Get("Origin"))
	opts, err := p.Service.Passkeys.SignInBegin(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.write(w, r, http.StatusOK, tools.Output{Kind: envelope.KindPasskeyOptions, Data: opts}, start)
}

func (s *server) passkeySignInFinish(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	p, ok := s.passkeyProject(w, r)
	if !ok {
		return
	}
	body, err := readBody(w, r, s.opts.MaxBody)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req passkeySignInRequest
	if err := json.Unmarshal(body, &req); err != nil || req.Challenge == "" || len(req.Credential) == 0 {
		s.fail(w, r, errs.E(errs.InvalidArgument, "the body is {\"challenge\": …, \"credential\": {…}} (the browser's PublicKeyCredential)").Unmet("a sign-in names its challenge and credential"))
		return
	}
	ctx := service.WithPageOrigin(r.Context(), r.Header.Get("Origin"))
	in, err := p.Service.Passkeys.SignInFinish(ctx, req.Challenge, req.Credential)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.write(w, r, http.StatusOK, tools.Output{Kind: envelope.KindPasskeySignIn, Data: in}, start)
}
