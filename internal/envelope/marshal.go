package envelope

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes an envelope the same way on every transport: compact,
// without HTML escaping, newline-terminated — encoding/json's Encoder
// with SetEscapeHTML(false). (A hand-written encoder of the envelope
// saved a cold `dont show` less than 0.5 ms: bench/results/report.md,
// "What one binary costs".)
func Marshal(env Envelope) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(env) // Data is JSON already (New, Fail), so nothing fails
	return b.Bytes()
}
