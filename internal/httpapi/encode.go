package httpapi

import (
	"bytes"
	"encoding/json"

	"github.com/dont-cli/dont/internal/envelope"
)

// marshalEnvelope is envelope.Marshal, byte for byte, without running
// encoding/json's scanner over data: data is already JSON (envelope.New
// and Fail marshal it), and compacting and validating it again was the
// larger part of encoding a response. The envelope is encoded around a
// placeholder and data spliced in; data that is not plainly compact
// (whitespace outside strings, or empty) takes envelope.Marshal itself.
func marshalEnvelope(env envelope.Envelope) []byte {
	raw := env.Data
	if !compact(raw) {
		return envelope.Marshal(env)
	}
	env.Data = json.RawMessage(placeholder)
	b := envelope.Marshal(env)
	// The first `,"data":0,` is the envelope's own: the fields before it
	// are strings and a bool, in which a quote would be escaped.
	i := bytes.Index(b, []byte(`,"data":`+placeholder+`,`))
	if i < 0 {
		env.Data = raw
		return envelope.Marshal(env)
	}
	i += len(`,"data":`)
	out := make([]byte, 0, len(b)+len(raw))
	out = append(out, b[:i]...)
	out = append(out, raw...)
	return append(out, b[i+len(placeholder):]...)
}

const placeholder = "0"

// compact reports whether b has no whitespace outside its strings, the
// form encoding/json's compaction leaves unchanged.
func compact(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			return false
		}
	}
	return !inString
}
