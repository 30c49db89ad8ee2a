package main

import (
	"encoding/json"
	"testing"
)

// The sizes behind the 400 KB, 4 MB and 1 MB limits, and the key values
// queries sort and compare, do not depend on whether valueSize and scalar
// took their shortcut: every value, plain or not, is read as decoding it
// reads it.
func TestAValueReadsTheSameWithOrWithoutDecodingIt(t *testing.T) {
	values := []string{
		`{"S":"water boils"}`, `{"S":""}`, `{"S":"h\u00e9"}`, `{"S":"hé"}`, `{"S":"a\"b"}`, `{"S":"a\\b"}`,
		`{"S":"a` + "\x01" + `b"}`, `{"S":"` + "\xff" + `"}`, `{"S":"a","N":"1"}`, `{"S":"a":"b"}`, `{ "S":"a"}`,
		`{"S":"a"} `, `{"S" :"a"}`, `{"\u0053":"a"}`, `{"N":"123.4500"}`, `{"N":"-0.001e5"}`, `{"N":"0"}`,
		`{"B":"aGVsbG8="}`, `{"B":"aGVsbG8"}`, `{"B":"!!!!"}`, `{"B":""}`, `{"BOOL":true}`, `{"BOOL":"true"}`,
		`{"NULL":true}`, `{"SS":["a","bc"]}`, `{"L":[{"S":"a"},{"N":"1"}]}`, `{"M":{"k":{"S":"v"}}}`, `{"SSSSS":"a"}`,
		`"S"`, `{}`, `{"`, `{"S":"`, `{"S":"a"`, `null`, ``,
	}
	for _, v := range values {
		if got, want := valueSize(json.RawMessage(v)), decodedValueSize(json.RawMessage(v)); got != want {
			t.Errorf("%s: valueSize %d, decoded %d", v, got, want)
		}
		typ, val := scalar(json.RawMessage(v))
		if wantTyp, wantVal := decodedScalar(json.RawMessage(v)); typ != wantTyp || val != wantVal {
			t.Errorf("%s: scalar %s %q, decoded %s %q", v, typ, val, wantTyp, wantVal)
		}
	}
}
