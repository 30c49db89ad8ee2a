package sqlite

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/dont-cli/dont/internal/jsontext"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// The documents a Commit stores are written here field by field, byte
// for byte what encoding/json writes for them with SetEscapeHTML(false),
// the encoding every transport gives data (TestDocumentsAreWhatEncodingJSONWrites
// compares the two over many values, and TestTheDocumentTypesHaveTheFieldsDocJSONWrites
// fails when a field is added): the same field order and omitempty rules,
// strings escaped as it escapes them (U+2028 and U+2029, invalid UTF-8 as
// U+FFFD; HTML characters left as they are), floats and times formatted
// as it formats them. So `show` can send an entity's document as it is
// stored (service.DocStore). A value whose encoding could fail (a time
// out of RFC 3339's range, a float that is not finite) is left to
// encoding/json (marshalDoc), as is an event detail holding anything but
// strings. Documents written before kept json.Marshal's HTML escapes:
// the same JSON values.

func entityDoc(e ledger.Entity) ([]byte, error) {
	if !jsontext.TimeOK(e.CreatedAt) || !jsontext.TimeOK(e.UpdatedAt) || (e.Confidence != nil && !jsontext.FloatOK(*e.Confidence)) {
		return marshalDoc(e)
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
		b = jsontext.AppendFloat(b, *e.Confidence)
	}
	b = optStrings(b, `,"depends_on":`, e.DependsOn)
	b = append(b, `,"status":`...)
	b = appendString(b, string(e.Status))
	b = optString(b, `,"author":`, e.Author)
	b = append(b, `,"created_at":`...)
	b = jsontext.AppendTime(b, e.CreatedAt)
	b = append(b, `,"updated_at":`...)
	b = jsontext.AppendTime(b, e.UpdatedAt)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, e.Version, 10)
	b = optString(b, `,"pending_spawn":`, e.PendingSpawn)
	b = optString(b, `,"last_spawn":`, e.LastSpawn)
	return append(b, '}'), nil
}

func spawnDoc(sp spawn.Spawn) ([]byte, error) {
	if !jsontext.TimeOK(sp.IssuedAt) || !jsontext.TimeOK(sp.ExpiresAt) || (sp.ResolvedAt != nil && !jsontext.TimeOK(*sp.ResolvedAt)) ||
		(sp.Temperature != nil && !jsontext.FloatOK(*sp.Temperature)) {
		return marshalDoc(sp)
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
		b = jsontext.AppendFloat(b, *sp.Temperature)
	}
	b = append(b, `,"issued_at":`...)
	b = jsontext.AppendTime(b, sp.IssuedAt)
	b = append(b, `,"expires_at":`...)
	b = jsontext.AppendTime(b, sp.ExpiresAt)
	if sp.ResolvedAt != nil {
		b = append(b, `,"resolved_at":`...)
		b = jsontext.AppendTime(b, *sp.ResolvedAt)
	}
	if sp.EntityVersion != 0 {
		b = append(b, `,"entity_version":`...)
		b = strconv.AppendInt(b, sp.EntityVersion, 10)
	}
	b = optString(b, `,"requested_by":`, sp.RequestedBy)
	return append(b, '}'), nil
}

func eventDoc(ev ledger.Event) ([]byte, error) {
	if !jsontext.TimeOK(ev.At) {
		return marshalDoc(ev)
	}
	for _, v := range ev.Detail {
		if _, ok := v.(string); !ok {
			return marshalDoc(ev)
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
	b = jsontext.AppendTime(b, ev.At)
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
	return jsontext.AppendStrings(append(b, key...), v, false)
}

// appendString is encoding/json's string encoding without HTML
// escaping (jsontext).
func appendString(b []byte, s string) []byte { return jsontext.AppendString(b, s, false) }

// marshalDoc is what the documents are written as when docjson does not
// write them: encoding/json's encoding with SetEscapeHTML(false), as
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
