package envelope

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dont-cli/dont/internal/errs"
)

// Every response is one line of compact JSON, HTML characters left as
// they are, that decodes to the envelope it encodes: clients, replays and
// the CLI compare these bytes.
func TestAResponseIsEncodedExactlyAsTheEnvelopeMarshalsIt(t *testing.T) {
	data := []any{
		map[string]any{"statement": "a <b> & \"c\" \u2028 d\te", "n": 1.5, "list": []string{"x y", `\"`}},
		"a string with \"data\":0, inside",
		nil,
		[]int{},
	}
	var envs []Envelope
	for _, d := range data {
		env, err := New("entity", d, []Warning{{Code: "w", Message: "<\x01>"}}, []string{"dont show"})
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
	}
	envs = append(envs, Fail(errs.E(errs.InvalidArgument, "bad \"data\":0, input"), nil),
		Envelope{Kind: "raw", Data: json.RawMessage(`{ "spaced": [1, 2] }`)},
		Envelope{Kind: "nil"},
		Envelope{Kind: "\"data\":0,", Data: json.RawMessage(`{"a":"b c"}`)})
	for _, env := range envs {
		env.Meta = Meta{DurationMS: 3, RequestID: "req-1"}
		got := Marshal(env)
		if bytes.Count(got, []byte("\n")) != 1 || !bytes.HasSuffix(got, []byte("\n")) || bytes.Contains(got, []byte(`\u003c`)) {
			t.Fatalf("encoded %q: want one line, newline-terminated, without HTML escapes", got)
		}
		var back Envelope
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("encoded %q: %v", got, err)
		}
		var compact bytes.Buffer
		if len(env.Data) > 0 {
			json.Compact(&compact, env.Data)
		} else {
			compact.WriteString("null")
		}
		if back.Kind != env.Kind || back.Meta != env.Meta || !bytes.Equal(back.Data, compact.Bytes()) || len(back.Warnings) != len(env.Warnings) {
			t.Fatalf("encoded %q decodes to %+v, want %+v", got, back, env)
		}
	}
}
