package ledger

import (
	"net/url"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// The two rules of doubt, in one place for every author: a person's or
// an agent's `trust --reason` and `dismiss --evidence` (CheckReason,
// CheckEvidence) and a provider's verdict in direct mode (internal/llm)
// are judged by the same functions, so that what is refused from one is
// refused from the other (TestOneRuleJudgesEveryAuthor).

// schemeOrPrefix matches a URI scheme (RFC 3986) or a CURIE prefix (an
// NCName without its rarer characters). It and hedgeVocabulary are built
// on first use: every CLI run pays for package initialisation, few of
// them judge a reason or evidence.
var schemeOrPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.+-]*$`) })

// maxEvidence bounds one piece of evidence: a reference, not a document.
const maxEvidence = 2048

// WellFormedEvidence reports whether s is an absolute URI
// ("https://go.dev/ref/spec", "file:///etc/hosts", "urn:isbn:0451450523")
// or a CURIE ("doi:10.1000/182", "PMID:12345678", "claim:01HX05A9K8VP"):
// a scheme or prefix, a colon and a non-empty reference, no whitespace or
// control characters, at most 2,048 bytes. A hierarchical URI
// ("scheme://…") must name a host, a file URI a path other than "/";
// http and https are always hierarchical.
func WellFormedEvidence(s string) bool {
	if s == "" || len(s) > maxEvidence || strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return false
	}
	prefix, ref, ok := strings.Cut(s, ":")
	if !ok || ref == "" || !schemeOrPrefix().MatchString(prefix) {
		return false
	}
	rest, hier := strings.CutPrefix(ref, "//")
	if !hier {
		switch strings.ToLower(prefix) {
		case "http", "https":
			return false
		}
		return true
	}
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Scheme, "file") {
		return u.Path != "" && u.Path != "/"
	}
	return u.Host != "" && rest != ""
}

// hedgeVocabulary holds the words a reason can be made of and still say
// nothing specific: hedges, verdict words and filler. A reason all of
// whose words are here is a hedge.
var hedgeVocabulary = sync.OnceValue(func() map[string]bool {
	words := `
		not no nor none nothing never sure unsure uncertain uncertainty unclear unknown
		maybe perhaps possibly possible probably probable likely unlikely might may
		could can cannot cant couldnt dont doesnt didnt isnt arent wasnt wont would
		should know known idk dunno depends depend hard tell say seems seem seemed
		looks look feel feels felt think thought guess hunch gut instinct
		suspect suspicious doubt doubts doubtful doubted dubious questionable fishy
		weird odd off hmm hm um uh kinda sorta
		verify verified verifiable unverifiable unverified unable able confirm
		confirmed determine check checked wrong incorrect false inaccurate untrue
		true right correct accurate valid invalid na reason reasons unsupported
		supported support insufficient sufficient enough information info data
		clear certain source sources cited cite citation citations proof proven
		evidence context details detail issue issues problem problems concern
		concerns some something somehow anything everything
		i im ive id me my we our us you it its itself this that these those there
		the a an claim claims claimed statement statements assertion stated
		is be been being are was were am has have had do does did to of so very
		really quite just as at all any for on in about with without whether or
		and if but fully entirely completely somewhat bit little like overall here
		also too more less much many further additional based given
	`
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
})

// IsHedge reports whether reason carries no specific content: it is
// empty, or every word in it is a hedge, a generic verdict word or filler
// ("Not sure.", "This claim might be wrong", "insufficient evidence").
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
	vocabulary := hedgeVocabulary()
	for _, w := range words {
		if !vocabulary[w] {
			return false
		}
	}
	return true
}
