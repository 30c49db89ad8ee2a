package envelope

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dont-cli/dont/internal/errs"
)

// Every response is the bytes encoding/json writes for the envelope: clients, replays
// and the CLI compare them.
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
		if got, want := Marshal(env), marshalJSON(env); !bytes.Equal(got, want) {
			t.Fatalf("encoded\n%s\nwant\n%s", got, want)
		}
	}
}
