package sqlite

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// The documents a Commit stores are written here field by field, byte
// for byte what json.Marshal writes for them (TestDocumentsAreWhatJSONMarshalWrites
// compares the two over many values, and TestTheDocumentTypesHaveTheFieldsDocJSONWrites
// fails when a field is added): the same field order and omitempty rules,
// strings escaped as it escapes them (HTML characters, U+2028 and U+2029,
// invalid UTF-8 as U+FFFD), floats and times formatted as it formats
// them. A value whose encoding could fail (a time out of RFC 3339's
// range, a float that is not finite) is left to json.Marshal, as is an
// event detail holding anything but strings.

func entityDoc(e ledger.Entity) ([]byte, error) {
	if !timeOK(e.CreatedAt) || !timeOK(e.UpdatedAt) || (e.Confidence != nil && !floatOK(*e.Confidence)) {
		return json.Marshal(e)
	}
	b := make([]byte, 0, 256)
	b = append(b, `{"id":`...)
	b = appendString(b, e.ID)
	b = append(b, `,"kind":`...)
	b = appendString(b, string(e.Kind))
	b = optString(b, `,"statement":`, e.Statement)
	b = optString(b, `,"curie":`, e.Curie)
	b = optString(b, `,"definition":`, e.Definition)
	b = optStrings(b, `,"atoms":`, e.Atoms)
	b = optStrings(b, `,"refs":`, e.Refs)
	if e.Confidence != nil {
		b = append(b, `,"confidence":`...)
		b = appendFloat(b, *e.Confidence)
	}
	b = optStrings(b, `,"depends_on":`, e.DependsOn)
	b = append(b, `,"status":`...)
	b = appendString(b, string(e.Status))
	b = optString(b, `,"author":`, e.Author)
	b = append(b, `,"created_at":`...)
	b = appendTime(b, e.CreatedAt)
	b = append(b, `,"updated_at":`...)
	b = appendTime(b, e.UpdatedAt)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, e.Version, 10)
	b = optString(b, `,"pending_spawn":`, e.PendingSpawn)
	b = optString(b, `,"last_spawn":`, e.LastSpawn)
	return append(b, '}'), nil
}

func spawnDoc(sp spawn.Spawn) ([]byte, error) {
	if !timeOK(sp.IssuedAt) || !timeOK(sp.ExpiresAt) || (sp.ResolvedAt != nil && !timeOK(*sp.ResolvedAt)) ||
		(sp.Temperature != nil && !floatOK(*sp.Temperature)) {
		return json.Marshal(sp)
	}
	b := make([]byte, 0, 384)
	b = append(b, `{"request_id":`...)
	b = appendString(b, sp.ID)
	b = append(b, `,"request_kind":`...)
	b = appendString(b, string(sp.Kind))
	b = optString(b, `,"entity_id":`, sp.EntityID)
	b = append(b, `,"state":`...)
	b = appendString(b, string(sp.State))
	b = optString(b, `,"outcome":`, string(sp.Outcome))
	b = append(b, `,"mode":`...)
	b = appendString(b, string(sp.Mode))
	b = optString(b, `,"pre_status":`, string(sp.PreStatus))
	b = optString(b, `,"question":`, sp.Question)
	if sp.N != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(sp.N), 10)
	}
	if sp.Temperature != nil {
		b = append(b, `,"temperature":`...)
		b = appendFloat(b, *sp.Temperature)
	}
	b = append(b, `,"issued_at":`...)
	b = appendTime(b, sp.IssuedAt)
	b = append(b, `,"expires_at":`...)
	b = appendTime(b, sp.ExpiresAt)
	if sp.ResolvedAt != nil {
		b = append(b, `,"resolved_at":`...)
		b = appendTime(b, *sp.ResolvedAt)
	}
	if sp.EntityVersion != 0 {
		b = append(b, `,"entity_version":`...)
		b = strconv.AppendInt(b, sp.EntityVersion, 10)
	}
	return append(b, '}'), nil
}

func eventDoc(ev ledger.Event) ([]byte, error) {
	if !timeOK(ev.At) {
		return json.Marshal(ev)
	}
	for _, v := range ev.Detail {
		if _, ok := v.(string); !ok {
			return json.Marshal(ev)
		}
	}
	b := make([]byte, 0, 288)
	b = append(b, `{"id":`...)
	b = appendString(b, ev.ID)
	b = append(b, `,"kind":`...)
	b = appendString(b, string(ev.Kind))
	b = optString(b, `,"entity_id":`, ev.EntityID)
	b = optString(b, `,"request_id":`, ev.RequestID)
	b = optString(b, `,"author":`, ev.Author)
	b = append(b, `,"at":`...)
	b = appendTime(b, ev.At)
	b = optString(b, `,"from":`, string(ev.From))
	b = optString(b, `,"to":`, string(ev.To))
	b = optString(b, `,"reason":`, ev.Reason)
	b = optStrings(b, `,"evidence":`, ev.Evidence)
	b = optString(b, `,"outcome":`, ev.Outcome)
	if ev.Direct {
		b = append(b, `,"direct":true`...)
	}
	if len(ev.Detail) > 0 {
		keys := make([]string, 0, len(ev.Detail))
		for k := range ev.Detail {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, `,"detail":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, ev.Detail[k].(string))
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

func optString(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendString(append(b, key...), v)
}

func optStrings(b []byte, key string, v []string) []byte {
	if len(v) == 0 {
		return b
	}
	b = append(append(b, key...), '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// timeOK: time.Time's MarshalJSON succeeds (a four-digit year, an offset
// under 24 hours).
func timeOK(t time.Time) bool {
	_, off := t.Zone()
	y := t.Year()
	return y >= 0 && y <= 9999 && off > -86400 && off < 86400
}

// appendTime is time.Time's MarshalJSON, of a time timeOK accepts.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

func floatOK(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendFloat is encoding/json's float64 encoding (ES6 number format).
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString is encoding/json's string encoding with HTML escaping, as
// json.Marshal writes it.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
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
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
