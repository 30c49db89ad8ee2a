package envelope

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/dont-cli/dont/internal/jsontext"
)

// Marshal encodes an envelope the same way on every transport: compact,
// without HTML escaping, newline-terminated — encoding/json's encoding of
// Envelope with SetEscapeHTML(false), byte for byte
// (TestMarshalIsEncodingJSONByteForByte, any envelope whose data is JSON).
//
// The envelope's fields are written here rather than by encoding/json:
// its first use of a type builds that type's encoder by reflection, which
// on a cold `dont show` cost more than the entity read (bench/results/
// report.md, "CLI cold start"). Data is already JSON (New and Fail
// marshal it; a stored document is passed through): it is copied as it
// is when it is compact, the form encoding/json's compaction leaves
// unchanged, and anything else takes encoding/json.
func Marshal(env Envelope) []byte {
	if !jsontext.Compact(env.Data) {
		return marshalJSON(env)
	}
	b := make([]byte, 0, 160+len(env.Data)+16*len(env.Hints)+96*len(env.Warnings))
	b = append(b, `{"envelope_version":`...)
	b = jsontext.AppendString(b, env.EnvelopeVersion, false)
	b = append(b, `,"cli_version":`...)
	b = jsontext.AppendString(b, env.CLIVersion, false)
	b = append(b, `,"ok":`...)
	b = strconv.AppendBool(b, env.OK)
	b = append(b, `,"envelope_kind":`...)
	b = jsontext.AppendString(b, env.Kind, false)
	b = append(b, `,"data":`...)
	b = append(b, env.Data...)
	b = append(b, `,"hints":`...)
	if env.Hints == nil {
		b = append(b, "null"...)
	} else {
		b = jsontext.AppendStrings(b, env.Hints, false)
	}
	b = append(b, `,"warnings":`...)
	if env.Warnings == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, w := range env.Warnings {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendWarning(b, w)
		}
		b = append(b, ']')
	}
	b = append(b, `,"meta":{"duration_ms":`...)
	b = strconv.AppendInt(b, env.Meta.DurationMS, 10)
	b = append(b, `,"request_id":`...)
	b = jsontext.AppendString(b, env.Meta.RequestID, false)
	if env.Meta.Mode != "" {
		b = append(b, `,"mode":`...)
		b = jsontext.AppendString(b, env.Meta.Mode, false)
	}
	return append(b, "}}\n"...)
}

// marshalJSON is Marshal by encoding/json: for data that is not compact.
func marshalJSON(env Envelope) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(env)
	return b.Bytes()
}

func appendWarning(b []byte, w Warning) []byte {
	b = append(b, `{"code":`...)
	b = jsontext.AppendString(b, string(w.Code), false)
	b = append(b, `,"message":`...)
	b = jsontext.AppendString(b, w.Message, false)
	if w.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = jsontext.AppendString(b, w.RequestID, false)
	}
	if w.Outcome != "" {
		b = append(b, `,"outcome":`...)
		b = jsontext.AppendString(b, w.Outcome, false)
	}
	return append(b, '}')
}
