package tools

import (
	"encoding/json"
	"testing"
)

func TestInputSchemaComesFromTheParams(t *testing.T) {
	for _, tl := range All() {
		s := tl.InputSchema(false)
		props := s["properties"].(map[string]any)
		all := tl.InputSchema(true)["properties"].(map[string]any)
		if s["type"] != "object" || s["additionalProperties"] != false {
			t.Fatalf("%s: %v", tl.Name, s)
		}
		for _, p := range tl.Params {
			_, listed := props[p.Name]
			_, listedWithInternal := all[p.Name]
			if listed == p.Internal || !listedWithInternal {
				t.Fatalf("%s.%s: listed %v (with internal %v), internal %v", tl.Name, p.Name, listed, listedWithInternal, p.Internal)
			}
		}
	}
	guess, _ := Lookup("guess")
	b, _ := json.Marshal(guess.InputSchema(false))
	want := `{"additionalProperties":false,"properties":{"n":{"default":3,"description":"number of candidates (1..20)","type":"integer"},"question":{"description":"the question","type":"string"},"temperature":{"description":"sampling temperature (0..2)","type":"number"}},"required":["question"],"type":"object"}`
	if string(b) != want {
		t.Fatalf("guess schema\n%s\nwant\n%s", b, want)
	}
	answer, _ := Lookup("answer")
	cand := answer.InputSchema(false)["properties"].(map[string]any)["candidate"].(map[string]any)
	if cand["type"] != "array" || cand["items"].(map[string]any)["type"] != "string" {
		t.Fatalf("candidate schema %v", cand)
	}
}
