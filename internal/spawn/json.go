package spawn

import (
	"github.com/dont-cli/dont/internal/jsontext"
	"strconv"
	"time"
)

// AppendJSON appends r as its JSON payload, byte for byte what
// encoding/json's Encoder writes with HTML escaping off (the envelope's
// data encoding, without the newline): the field order and omitempty
// rules of Request's tags, strings escaped as encoding/json escapes them
// (U+2028, U+2029, invalid UTF-8 as U+FFFD), times and floats formatted
// as it formats them. ok is false for a value encoding/json would refuse
// (a time outside RFC 3339's range, a temperature that is not finite):
// the caller then encodes r through encoding/json, which reports it.
// TestRequestJSONIsWhatEncodingJSONWrites compares the two.
func (r Request) AppendJSON(b []byte) ([]byte, bool) {
	if !jsontext.TimeOK(r.IssuedAt) || !jsontext.TimeOK(r.ExpiresAt) || (r.Temperature != nil && !jsontext.FloatOK(*r.Temperature)) {
		return b, false
	}
	b = append(b, `{"request_id":`...)
	b = appendString(b, r.RequestID)
	b = append(b, `,"request_kind":`...)
	b = appendString(b, string(r.RequestKind))
	if r.EntityID != "" {
		b = append(b, `,"entity_id":`...)
		b = appendString(b, r.EntityID)
	}
	b = append(b, `,"mode":`...)
	b = appendString(b, string(r.Mode))
	b = append(b, `,"context":{"clean":`...)
	b = strconv.AppendBool(b, r.Context.Clean)
	b = append(b, `,"prompt":`...)
	b = appendString(b, r.Context.Prompt)
	b = append(b, `,"allowed_tools":`...)
	b = appendStrings(b, r.Context.AllowedTools)
	b = append(b, `,"forbidden_tools":`...)
	b = appendStrings(b, r.Context.ForbiddenTools)
	b = append(b, `,"max_tool_calls":`...)
	b = strconv.AppendInt(b, int64(r.Context.MaxToolCalls), 10)
	b = append(b, `},"callback":{"actions":`...)
	b = appendStrings(b, r.Callback.Actions)
	b = append(b, `,"request_id":`...)
	b = appendString(b, r.Callback.RequestID)
	if r.Callback.Token != "" {
		b = append(b, `,"token":`...)
		b = appendString(b, r.Callback.Token)
	}
	b = append(b, `},"issued_at":"`...)
	b = r.IssuedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","expires_at":"`...)
	b = r.ExpiresAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if r.N != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(r.N), 10)
	}
	if r.Temperature != nil {
		b = append(b, `,"temperature":`...)
		b = jsontext.AppendFloat(b, *r.Temperature)
	}
	return append(b, '}'), true
}

func appendStrings(b []byte, v []string) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return jsontext.AppendStrings(b, v, false)
}

// appendString is encoding/json's string encoding without HTML escaping.
func appendString(b []byte, s string) []byte { return jsontext.AppendString(b, s, false) }
