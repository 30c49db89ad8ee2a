package tools

import (
	"encoding/json"
	"testing"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
)

// FuzzValidate: for every tool, any JSON arguments either validate into
// Args whose accessors return well-typed values, or are refused with a
// usage error that names the tool and carries remediation.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{`{}`, `{"id":"claim:01HX05A9K8VP0000000000000A"}`, `{"statement":"a","atom":["x",1]}`, `{"n":3.5}`, `{"n":"3"}`,
		`{"n":1e300}`, `{"temperature":-1}`, `{"evidence":"https://x.org"}`, `{"evidence":[]}`, `{"status":"bogus"}`, `{"limit":-5}`,
		`{"history":"yes"}`, `{"mode":"direct"}`, `{"candidate":[null]}`, `{"request_id":null}`, `{"":""}`} {
		f.Add(uint8(0), []byte(s))
	}
	tools := All()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		var raw map[string]any
		if json.Unmarshal(body, &raw) != nil {
			return
		}
		tool := tools[int(which)%len(tools)]
		a, err := tool.Validate(raw)
		if err != nil {
			if e := present.Explain(err); e.Code != errs.Usage || len(e.Remediation) == 0 {
				t.Fatalf("%s: refusal without usage code or remediation: %+v", tool.Name, e)
			}
			return
		}
		for _, p := range tool.Params {
			if p.Required {
				if _, ok := a[p.Name]; !ok {
					t.Fatalf("%s: validated without required %s", tool.Name, p.Name)
				}
			}
			switch p.Type {
			case String:
				a.Str(p.Name)
			case Strings:
				a.Strs(p.Name)
			case Number:
				a.Float(p.Name)
			case Integer:
				a.Int(p.Name)
			case Boolean:
				a.Bool(p.Name)
			}
		}
		for k := range a {
			if !declares(tool, k) {
				t.Fatalf("%s: validated an unknown parameter %q", tool.Name, k)
			}
		}
	})
}

func declares(t *Tool, name string) bool {
	for _, p := range t.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}
