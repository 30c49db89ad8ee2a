package httpapi

import (
	"regexp"
	"strings"
	"testing"
)

// The byte-by-byte check accepts exactly what the documented pattern
// does: a caller's id that the pattern refuses (a control character, a
// space, a quote that would end a log field) is never echoed.
func TestARequestIDIsReusedExactlyWhenItMatchesTheDocumentedPattern(t *testing.T) {
	re := regexp.MustCompile(requestIDPattern)
	cases := []string{"", "a", "req:caller-1", "A.b_c-D:9", strings.Repeat("x", 64), strings.Repeat("x", 65),
		"has space", "tab\t", "new\nline", `quote"`, "é", "slash/", "semi;", "\x00", "req:1\x7f", strings.Repeat("9", 63) + "!"}
	for c := 0; c < 256; c++ {
		cases = append(cases, "id"+string(rune(c)), string([]byte{byte(c)}))
	}
	for _, id := range cases {
		if got, want := wellFormedRequestID(id), re.MatchString(id); got != want {
			t.Errorf("wellFormedRequestID(%q) = %v; the pattern %s says %v", id, got, requestIDPattern, want)
		}
	}
}
