package deployment

import (
	"context"
	"errors"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// SecretVersions is a store whose callback-secret versions can be listed
// and retired (internal/store/dynamo).
type SecretVersions interface {
	SecretVersions(ctx context.Context) ([]dynamo.SecretVersion, error)
	RetireSecretVersions(ctx context.Context, current string, keyIDs []string) error
}

// SecretRetirement is the answer to retire_secrets: the version new
// callback tokens are made under, the versions removed, and the older
// ones kept with when they may go.
type SecretRetirement struct {
	Project string        `json:"project"`
	KeyID   string        `json:"key_id"`
	Retired []string      `json:"retired_key_ids"`
	Kept    []KeptVersion `json:"kept"`
	// Wait is how long after a rotation its outgoing version is kept: the
	// project's spawn_max_lease, and at least the minute a warm instance
	// keeps the current version it read.
	Wait string `json:"wait"`
}

// KeptVersion is an older version that is not yet safe to retire.
type KeptVersion struct {
	KeyID string `json:"key_id"`
	// RetirableAt is when it may go; nil if unknown (replaced before
	// rotations recorded when: it may go once a later version's end is
	// known and far enough back).
	RetirableAt *time.Time `json:"retirable_at"`
}

// RetireSecrets removes the versions of the project's callback secret that
// no live token can still need: every version older than the current one
// that stopped being current (a rotation replaced it) more than the
// project's longest spawn lease plus projectRefresh ago. A spawn lives at
// most spawn_max_lease from its issue, and its token was made under the
// version its instance took for current at issue — which, for up to
// projectRefresh after a rotation, may be the replaced one — so every
// token of such a version belongs to a spawn that has already ended. A version replaced before rotations recorded when is bounded by the
// end of any later version (it ended no later). When older versions exist
// and none may go yet, it refuses (conflict, with the time to retry) and
// removes nothing; a project with nothing older than its current version
// answers with nothing retired. A token of a retired version is refused
// like any invalid callback token (401).
func RetireSecrets(ctx context.Context, svc *service.Service, now time.Time) (SecretRetirement, error) {
	st, ok := svc.Tokens.(SecretVersions)
	if !ok {
		return SecretRetirement{}, errs.E(errs.InvalidArgument, "this store's project secret has no versions to retire")
	}
	versions, err := st.SecretVersions(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return SecretRetirement{}, errs.E(errs.NotFound, "the project has no secret yet: create its first token").With("project", svc.Project)
	}
	if err != nil {
		return SecretRetirement{}, errs.E(errs.StoreError, "cannot read the project's secret versions").Wrap(err)
	}
	wait := svc.SpawnMaxLease
	if wait <= 0 {
		wait = settings.DefaultSpawnMaxLease
	}
	// A warm instance may issue tokens under the old version for up to
	// projectRefresh after the rotation, each living up to the lease.
	wait += projectRefresh
	rep := SecretRetirement{Project: svc.Project, Retired: []string{}, Kept: []KeptVersion{}, Wait: wait.String()}
	// Walk newest first, carrying the earliest known end of a later
	// version: an older version ended no later than that.
	bound := time.Time{}
	var retire []string
	for i := len(versions) - 1; i >= 0; i-- {
		v := versions[i]
		if v.Current {
			rep.KeyID = v.KeyID
			continue
		}
		if !v.Until.IsZero() && (bound.IsZero() || v.Until.Before(bound)) {
			bound = v.Until
		}
		if bound.IsZero() {
			rep.Kept = append(rep.Kept, KeptVersion{KeyID: v.KeyID})
			continue
		}
		at := bound.Add(wait)
		if !now.Before(at) {
			retire = append(retire, v.KeyID)
			continue
		}
		rep.Kept = append(rep.Kept, KeptVersion{KeyID: v.KeyID, RetirableAt: &at})
	}
	if len(retire) == 0 && len(rep.Kept) > 0 {
		e := errs.E(errs.Conflict, "no secret version is safe to retire yet: a token made under it may belong to a spawn that is still pending",
			retireSecretsStep).
			With("project", svc.Project).
			Unmet("a version may be retired once it stopped being current more than the project's spawn_max_lease plus a minute ago: " + rep.Wait)
		if first := earliest(rep.Kept); first != nil {
			at := first.UTC().Format(time.RFC3339)
			e = e.Unmet("retirable_at " + at)
			e.Remediation[0].Description = "retry at or after " + at
		} else {
			e.Remediation[0].Description = "rotate once more: the versions kept were replaced before rotations recorded when, and the next rotation's record bounds them"
		}
		return rep, e
	}
	if err := st.RetireSecretVersions(ctx, rep.KeyID, retire); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return SecretRetirement{}, errs.E(errs.Conflict, "the project's secret was rotated meanwhile; nothing was retired", retireSecretsStep).With("project", svc.Project)
		}
		return SecretRetirement{}, errs.E(errs.StoreError, "cannot retire the project's secret versions").Wrap(err)
	}
	for i := len(retire) - 1; i >= 0; i-- {
		rep.Retired = append(rep.Retired, retire[i])
	}
	return rep, nil
}

// retireSecretsStep is the invoke that retires a project's old secret
// versions (its description says when to run it).
var retireSecretsStep = errs.Step{
	Command:     `aws lambda invoke --function-name "$DONT_OPERATOR_FUNCTION" --cli-binary-format raw-in-base64-out --payload '{"dont_operator":{"retire_secrets":{"project":"<project>"}}}' /dev/stdout`,
	Description: "retire the project's secret versions older than its spawn_max_lease",
}

func earliest(kept []KeptVersion) *time.Time {
	var out *time.Time
	for _, k := range kept {
		if k.RetirableAt != nil && (out == nil || k.RetirableAt.Before(*out)) {
			out = k.RetirableAt
		}
	}
	return out
}
