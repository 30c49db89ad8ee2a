package envelope

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
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
	if !compact(env.Data) {
		return marshalJSON(env)
	}
	b := make([]byte, 0, 160+len(env.Data)+16*len(env.Hints)+96*len(env.Warnings))
	b = append(b, `{"envelope_version":`...)
	b = appendString(b, env.EnvelopeVersion)
	b = append(b, `,"cli_version":`...)
	b = appendString(b, env.CLIVersion)
	b = append(b, `,"ok":`...)
	b = strconv.AppendBool(b, env.OK)
	b = append(b, `,"envelope_kind":`...)
	b = appendString(b, env.Kind)
	b = append(b, `,"data":`...)
	b = append(b, env.Data...)
	b = append(b, `,"hints":`...)
	if env.Hints == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, h := range env.Hints {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, h)
		}
		b = append(b, ']')
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
	b = appendString(b, env.Meta.RequestID)
	if env.Meta.Mode != "" {
		b = append(b, `,"mode":`...)
		b = appendString(b, env.Meta.Mode)
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
	b = appendString(b, string(w.Code))
	b = append(b, `,"message":`...)
	b = appendString(b, w.Message)
	if w.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = appendString(b, w.RequestID)
	}
	if w.Outcome != "" {
		b = append(b, `,"outcome":`...)
		b = appendString(b, w.Outcome)
	}
	return append(b, '}')
}

// appendString is encoding/json's string encoding without HTML escaping:
// quote and backslash escaped, control characters as \b \f \n \r \t or
// \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		} else {
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// compact reports whether b is non-empty and has no whitespace outside
// its strings, the form encoding/json's compaction leaves unchanged.
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
