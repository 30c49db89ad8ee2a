package llm

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// ValidateVerdict checks that v is usable as a terminal action: a dismiss
// with at least one well-formed URI or CURIE as evidence, or a trust with a
// specific, non-hedge reason. It returns nil or an *UnusableError matching
// ErrUnusableVerdict.
func ValidateVerdict(v Verdict) error {
	if p := problem(v); p != "" {
		return &UnusableError{Op: opJudge, Problem: p}
	}
	return nil
}

func problem(v Verdict) string {
	switch v.Action {
	case ActionDismiss:
		if len(v.Evidence) == 0 {
			return "dismiss without evidence"
		}
		for _, e := range v.Evidence {
			if !WellFormedEvidence(e) {
				return "dismiss evidence is not a URI or CURIE: " + strings.TrimSpace(snippet(e))
			}
		}
		return ""
	case ActionTrust:
		if strings.TrimSpace(v.Reason) == "" {
			return "trust without a reason"
		}
		if IsHedge(v.Reason) {
			return "trust reason is only a hedge: " + snippet(v.Reason)
		}
		return ""
	case "":
		return "no action"
	default:
		return "unknown action " + snippet(v.Action)
	}
}

// normalise trims the fields, lower-cases the action and drops empty and
// repeated evidence, so that ValidateVerdict judges what a caller would
// record.
func normalise(v Verdict) Verdict {
	out := Verdict{
		Action: strings.ToLower(strings.TrimSpace(v.Action)),
		Reason: strings.TrimSpace(v.Reason),
	}
	seen := map[string]bool{}
	for _, e := range v.Evidence {
		e = strings.TrimSpace(e)
		if e == "" || seen[e] {
			continue
		}
		seen[e] = true
		out.Evidence = append(out.Evidence, e)
	}
	if out.Action == ActionTrust && len(out.Evidence) == 0 {
		out.Evidence = nil
	}
	return out
}

// parseVerdict reads a verdict object (the model's JSON output or tool input),
// normalises and validates it. Every failure is an *UnusableError for
// provider.
func parseVerdict(provider string, raw []byte) (Verdict, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return Verdict{}, unusable(provider, opJudge, "empty output")
	}
	var wire struct {
		Action   *string  `json:"action"`
		Evidence []string `json:"evidence"`
		Reason   string   `json:"reason"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&wire); err != nil {
		return Verdict{}, unusable(provider, opJudge, "output is not a verdict object: %s", snippet(string(raw)))
	}
	if dec.More() {
		return Verdict{}, unusable(provider, opJudge, "trailing data after the verdict object")
	}
	if wire.Action == nil {
		return Verdict{}, unusable(provider, opJudge, "verdict has no action")
	}
	v := normalise(Verdict{Action: *wire.Action, Evidence: wire.Evidence, Reason: wire.Reason})
	if p := problem(v); p != "" {
		return Verdict{}, unusable(provider, opJudge, "%s", p)
	}
	return v, nil
}

// schemeOrPrefix matches a URI scheme (RFC 3986) or a CURIE prefix (an NCName
// without its rarer characters).
// It and hedgeVocabulary are built on first use: the CLI links this
// package, and most runs never judge a verdict.
var schemeOrPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.+-]*$`) })

// WellFormedEvidence reports whether s is an absolute URI
// ("https://go.dev/ref/spec", "file:///etc/hosts", "urn:isbn:0451450523") or a
// CURIE ("doi:10.1000/182", "PMID:12345678", "claim:01HX05A9K8VP"): a scheme
// or prefix, a colon and a non-empty reference, no whitespace; a
// hierarchical URI ("scheme://...") must name a host unless it is a file URI.
func WellFormedEvidence(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return false
	}
	prefix, ref, ok := strings.Cut(s, ":")
	if !ok || ref == "" || !schemeOrPrefix().MatchString(prefix) {
		return false
	}
	if rest, hier := strings.CutPrefix(ref, "//"); hier {
		u, err := url.Parse(s)
		if err != nil {
			return false
		}
		if strings.EqualFold(u.Scheme, "file") {
			return u.Path != "" && u.Path != "/"
		}
		return u.Host != "" && rest != ""
	}
	return true
}

// hedgeVocabulary holds the words a reason can be made of and still say
// nothing specific: hedges, verdict words and filler. A reason all of whose
// words are here is a hedge.
var hedgeVocabulary = sync.OnceValue(func() map[string]bool {
	words := `
		not no nor none nothing never sure unsure uncertain uncertainty unclear unknown
		maybe perhaps possibly possible probably probable likely unlikely might may
		could can cannot cant couldnt dont doesnt didnt isnt arent wasnt wont would
		should know known idk depends depend hard tell say seems seem seemed think
		guess feel suspect suspicious doubt doubts doubtful doubted questionable
		verify verified verifiable unverifiable unverified unable able confirm
		confirmed determine check checked wrong incorrect false inaccurate untrue
		true right correct accurate valid invalid na reason reasons unsupported
		supported support insufficient sufficient enough information info data
		clear certain source sources cited cite citation citations proof proven
		evidence context details detail issue issues problem problems concern
		concerns some something anything everything
		i im ive id me my we our us you it its itself this that these those there
		the a an claim claims claimed statement statements assertion stated
		is be been being are was were am has have had do does did to of so very
		really quite just as at all any for on in about with without whether or
		and if but fully entirely completely somewhat bit little overall here
		also too more less much many further additional based given
	`
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
})

// IsHedge reports whether reason carries no specific content: it is empty, or
// every word in it is a hedge, a generic verdict word or filler ("Not sure.",
// "This claim might be wrong", "I can't verify this").
func IsHedge(reason string) bool {
	cleaned := strings.Map(func(r rune) rune {
		switch r {
		case '\'', '’':
			return -1
		}
		return unicode.ToLower(r)
	}, reason)
	words := strings.FieldsFunc(cleaned, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		if !hedgeVocabulary()[w] {
			return false
		}
	}
	return true
}
