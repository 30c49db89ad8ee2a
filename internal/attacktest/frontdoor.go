package attacktest

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// A secret of the right shape (32 bytes, base64url) and a token id of the
// right shape that no store holds.
const (
	wellFormedSecret = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	unknownTokenID   = "tok:01HX05A9K8VP0000000000000A"
)

// garbageTokensReadNothing: an unauthenticated flood of tokens dont never
// makes — no prefix, a wrong kind of id, a short or overlong secret, a
// callback token without its MAC — is refused 401 with remediation on
// its face: none reaches the token store. A well-formed token that does
// not exist, sent over and over, reaches it at most once.
func garbageTokensReadNothing(r run) {
	garbage := []string{
		"", "garbage", "dont_", "dont_x_y", "dont_tok:x_" + wellFormedSecret,
		"dont_claim:01HX05A9K8VP0000000000000A_" + wellFormedSecret,
		"dont_" + unknownTokenID + "_short",
		"dont_" + unknownTokenID + "_" + wellFormedSecret + "A",
		"dont_" + unknownTokenID + "_" + strings.Repeat("*", len(wellFormedSecret)),
		"dontcb_spawn:01HX05A9K8VP0000000000000A_short",
		"dontcb_claim:01HX05A9K8VP0000000000000A_" + wellFormedSecret,
		"dontcb__" + wellFormedSecret,
		strings.Repeat("dont_", 400),
	}
	before := r.lookups()
	for round := range 5 {
		for _, tok := range garbage {
			rep := r.call(tok, "list", nil)
			r.refused(rep, http.StatusUnauthorized, "unauthenticated", fmt.Sprintf("garbage token %.40q (round %d)", tok, round))
		}
	}
	if after := r.lookups(); after != before {
		r.t.Fatalf("%d garbage tokens reached the token store %d times, want none", 5*len(garbage), after-before)
	}
	unknown := "dont_" + unknownTokenID + "_" + wellFormedSecret
	for i := range 20 {
		r.refused(r.call(unknown, "list", nil), http.StatusUnauthorized, "unauthenticated", fmt.Sprintf("an unknown token, try %d", i))
	}
	if after := r.lookups(); after-before > 1 {
		r.t.Fatalf("an unknown token sent 20 times reached the token store %d times, want at most once", after-before)
	}
}

// tokenOverItsRateChangesNothing: a harness token flooding writes past
// its burst gets 429 rate-limited with remediation and Retry-After, and
// every refused write changed nothing: the claims stored are exactly the
// ones answered 200, and a refused one did not even read the token store.
// Another token of the project is not held up by it.
func tokenOverItsRateChangesNothing(r run) {
	burst := r.target.TokenBurst
	if burst <= 0 {
		r.t.Fatal("the target does not say its per-token burst (Target.TokenBurst)")
	}
	flooder, other := r.target.Token(r.t, "harness"), r.target.Token(r.t, "harness")
	nonce := fmt.Sprintf("flood-%d", time.Now().UnixNano())
	applied, throttled := 0, 0
	before := r.lookups()
	for i := range burst + 10 {
		rep := r.call(flooder, "conclude", map[string]any{"statement": fmt.Sprintf("%s claim %d", nonce, i)})
		switch rep.Status {
		case http.StatusOK:
			applied++
		case http.StatusTooManyRequests:
			r.refused(rep, http.StatusTooManyRequests, "rate-limited", fmt.Sprintf("write %d over the rate", i))
			if rep.Header != nil && rep.Header.Get("Retry-After") == "" {
				r.t.Fatalf("write %d: 429 without Retry-After", i)
			}
			throttled++
		default:
			r.t.Fatalf("write %d: %d %s", i, rep.Status, rep.Raw)
		}
	}
	if applied > burst || throttled < 10 {
		r.t.Fatalf("%d writes applied and %d refused past a burst of %d", applied, throttled, burst)
	}
	if looked := r.lookups() - before; r.target.Lookups != nil && looked != int64(applied) {
		r.t.Fatalf("%d writes applied, %d tokens looked up: a refused write read the token store", applied, looked)
	}
	// Every page of the listing: the project holds other subtests' claims.
	stored := 0
	for args := (map[string]any{"limit": 1000}); ; {
		listed := r.ok(other, "list", args)
		entities, _ := listed.Data()["entities"].([]any)
		for _, e := range entities {
			m, _ := e.(map[string]any)
			if st, _ := m["statement"].(string); strings.HasPrefix(st, nonce+" ") {
				stored++
			}
		}
		next, _ := listed.Data()["next_cursor"].(string)
		if next == "" {
			break
		}
		args = map[string]any{"limit": 1000, "cursor": next}
	}
	if stored != applied {
		t := r.t
		t.Fatalf("%d flood claims stored, %d answered 200: a refused write changed something", stored, applied)
	}
}

// lookups is the target's count of token-store lookups, 0 if it cannot count.
func (r run) lookups() int64 {
	if r.target.Lookups == nil {
		return 0
	}
	return r.target.Lookups()
}
