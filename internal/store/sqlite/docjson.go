package sqlite

import (
	"bytes"
	"encoding/json"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// The documents a Commit stores are encoding/json's encoding with
// SetEscapeHTML(false), the encoding every transport gives data, so
// `show` can send an entity's document as it is stored
// (store.DocStore). Documents written before kept json.Marshal's HTML
// escapes: the same JSON values. (A hand-written encoder of these saved
// a cold write less than 0.5 ms: bench/results/report.md, "What one
// binary costs".)

func entityDoc(e ledger.Entity) ([]byte, error) { return marshalDoc(e) }

func spawnDoc(sp spawn.Spawn) ([]byte, error) { return marshalDoc(sp) }

func eventDoc(ev ledger.Event) ([]byte, error) { return marshalDoc(ev) }

// marshalDoc is encoding/json's encoding with SetEscapeHTML(false), as
// every transport encodes data (envelope.MarshalData).
func marshalDoc(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
