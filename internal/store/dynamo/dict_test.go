package dynamo

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/ids"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// Items written with dictionary1 must read for as long as a table keeps
// them: the dictionary is never edited (a better one is another suffix).
func TestTheCompressionDictionaryIsFrozen(t *testing.T) {
	sum := sha256.Sum256([]byte(dictionary1))
	if got, want := hex.EncodeToString(sum[:]), dictionary1SHA256; got != want {
		t.Fatalf("dictionary1 changed (sha256 %s, frozen as %s): items written with it would no longer read; add a dictionary2 instead", got, want)
	}
}

const dictionary1SHA256 = "91f2ff832b32e8233e51ee8dc3c4cdf42a878dcb651b8ddc904cbcc96f0da5dd"

// Items a table holds from before the dictionary (gzip under name+"z",
// or plain) still read, and what packed writes reads back.
func TestItemsWrittenBeforeTheDictionaryStillRead(t *testing.T) {
	text := []byte(strings.Repeat(`{"id":"event:x","kind":"concluded"}`, 20))
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(text)
	w.Close()
	for name, it := range map[string]map[string]types.AttributeValue{
		"gzip":  {"hz": &types.AttributeValueMemberB{Value: z.Bytes()}},
		"plain": {"h": str(string(text))},
	} {
		got, err := unpackText(it, "h")
		if err != nil || !bytes.Equal(got, text) {
			t.Fatalf("%s: read %q, %v", name, got, err)
		}
	}
	it := map[string]types.AttributeValue{}
	packText(it, "h", text)
	if _, ok := it["h"+dictionarySuffix]; !ok {
		t.Fatalf("repetitive text was not stored compressed: %v", it)
	}
	if got, err := unpackText(it, "h"); err != nil || !bytes.Equal(got, text) {
		t.Fatalf("read back %q, %v", got, err)
	}
}

// An assume on a claim of a few hundred characters writes a spawn item of
// one write unit (under 1 KB): its request, prompt included, compresses
// against the dictionary (docs/aws-cost.md).
func TestAnAssumesSpawnItemStaysUnderOneKilobyte(t *testing.T) {
	s, e, sp := longClaimUnderReview()
	req := spawn.NewRequest(sp, &e)
	req.Context.ForbiddenTools = nil // derived, not stored
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(req); err != nil {
		t.Fatal(err)
	}
	sp.Request = bytes.TrimSpace(b.Bytes())
	it, err := s.spawnItem(sp)
	if err != nil {
		t.Fatal(err)
	}
	n := itemBytes(it)
	t.Logf("spawn item: %d bytes", n)
	if n >= 1024 {
		t.Fatalf("a spawn item of %d bytes for a %d-character claim: two write units", n, len(e.Statement))
	}
	back, err := decodeSpawn(it)
	if err != nil || !bytes.Equal(back.Request, sp.Request) || back.ID != sp.ID || back.RequestedBy != sp.RequestedBy {
		t.Fatalf("read back %+v, %v", back, err)
	}
}

// An issue's put of a 300-character claim's entity item — its document,
// the spawn_requested event on its tail, the copy of its pending spawn —
// stays under 1 KB: one write unit, as without the copy.
func TestAnIssuedEntityItemWithItsPendingSpawnStaysUnderOneKilobyte(t *testing.T) {
	s, e, sp := longClaimUnderReview()
	at := sp.IssuedAt
	sp.KeyDigest, sp.Request = "306a4606092fbce9af38ab122d994e5d", []byte(`{"request_id":"x"}`)
	e.Version, e.PendingSpawn, e.LastSpawn = 2, sp.ID, sp.ID
	ev := ledger.Event{ID: ids.New(ids.Event, at), Kind: ledger.EvSpawnRequested, EntityID: e.ID, RequestID: sp.ID, Author: "api", At: at,
		From: ledger.Verified, To: ledger.Unverified,
		Detail: map[string]any{"request_kind": "assume", "expires_at": sp.ExpiresAt.Format(spawn.TimeFormat), "mode": "harness"}}
	it, err := s.entityItem(e, entityState{pending: sp.ID, pendingSpawn: &sp, expires: timeText(sp.ExpiresAt), tail: []ledger.Event{ev}, listed: "verified"})
	if err != nil {
		t.Fatal(err)
	}
	n := itemBytes(it)
	t.Logf("issued entity item: %d bytes, of which the pending spawn's copy %d", n, itemBytes(map[string]types.AttributeValue{"psd1": it["psd1"]}))
	if n >= 1024 {
		t.Fatalf("an issued entity item of %d bytes for a %d-character claim: two write units", n, len(e.Statement))
	}
	_, st, err := decodeEntity(it)
	if err != nil || st.pendingSpawn == nil {
		t.Fatalf("read back %+v, %v", st, err)
	}
	back := *st.pendingSpawn
	sp.Request = nil
	if fmt.Sprintf("%+v", back) != fmt.Sprintf("%+v", sp) {
		t.Fatalf("the pending spawn read back\n%+v\nwant\n%+v", back, sp)
	}
}

// longClaimUnderReview is a store, a claim of 300 characters and an
// assume spawn issued on it: the sizes the tests above hold under 1 KB.
func longClaimUnderReview() (*Store, ledger.Entity, spawn.Spawn) {
	at := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	e := ledger.Entity{ID: ids.New(ids.Claim, at), Kind: ledger.KindClaim, Status: ledger.Unverified, Version: 1, CreatedAt: at, UpdatedAt: at,
		Statement: "The 2019 revision of the SI fixed the Boltzmann constant at exactly 1.380649e-23 J/K, so the kelvin no longer " +
			"depends on the triple point of water; water at standard sea-level pressure (101.325 kPa) still boils at about " +
			"99.97 degrees Celsius on ITS-90, not exactly 100, according to the CRC Handbook (97th edition), table 6-10."}
	sp := spawn.Spawn{ID: ids.New(ids.Spawn, at), Kind: spawn.Assume, EntityID: e.ID, State: spawn.Pending, Mode: spawn.ModeHarness,
		PreStatus: e.Status, IssuedAt: at, ExpiresAt: at.Add(24 * time.Hour), EntityVersion: 2, RequestedBy: ids.New(ids.Token, at)}
	return New(nil, "t", "a-project-name"), e, sp
}

// itemBytes is an item's size as DynamoDB bills it: names and values.
func itemBytes(it map[string]types.AttributeValue) int {
	n := 0
	for k, v := range it {
		n += len(k)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberB:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			n += len(v.Value)/2 + 1
		}
	}
	return n
}
