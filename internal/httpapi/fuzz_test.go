package httpapi

import (
	"testing"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
	"github.com/dont-cli/dont/internal/tools"
)

// FuzzDecodeCall: any body either decodes to arguments that every tool
// validates without panicking, or is refused with an error that explains itself.
func FuzzDecodeCall(f *testing.F) {
	for _, seed := range []string{``, `{}`, `{"args":{}}`, `{"args":{"statement":"a","n":3}}`, `{"args":[1]}`, `{"args":{"evidence":["a",1]}}`,
		`{"args":{"n":1e400}}`, `{"args":{"n":-0.5}}`, `{"args":null}`, `{"args":{"id":"claim:01HX05A9K8VP0000000000000A"}} x`, "\x00", `{"args":{"a":{"b":[{}]}}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeCall(body)
		if err != nil {
			if e := present.Explain(err); (e.Code != BadJSON && e.Code != errs.InvalidArgument) || len(e.Remediation) == 0 {
				t.Fatalf("decode error without remediation: %+v", e)
			}
			return
		}
		for _, tool := range tools.All() {
			if _, err := tool.Validate(req.Args); err != nil {
				if e := present.Explain(err); e.Code != errs.Usage || len(e.Remediation) == 0 {
					t.Fatalf("%s: validation error %+v", tool.Name, e)
				}
			}
		}
	})
}
