// Package rules holds the person's approval rules: allow, ask or forbid
// a command by its prefix or a pattern, per target tier, answered before
// a person is asked (docs/harnesses.md, "Rules"). A rule carries examples
// that must match and must not match; a rule that fails its own examples
// does not load. The rules come only from the person's settings
// (docs/security.md); this package does no I/O.
package rules

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Decision is what a rule says of a command.
type Decision string

// The decisions. Ask leaves the question to a person, and is how a later,
// broader allow rule is kept away from a command.
const (
	Allow  Decision = "allow"
	Ask    Decision = "ask"
	Forbid Decision = "forbid"
)

// Rule is one rule as the person wrote it ([[rules]] in their config).
type Rule struct {
	Name     string   `toml:"name"`
	Decision Decision `toml:"decision"`
	// Prefix matches a command whose first words are these, word for word.
	Prefix []string `toml:"prefix,omitempty"`
	// Pattern is a Go regular expression the whole command must match.
	Pattern string `toml:"pattern,omitempty"`
	// Tiers narrows the rule to questions for these target tiers; empty
	// means every tier.
	Tiers []string `toml:"tiers,omitempty"`
	// Match are commands the rule must match, NotMatch commands it must
	// not: checked when the rules load.
	Match    []string `toml:"match,omitempty"`
	NotMatch []string `toml:"not_match,omitempty"`
}

// Set is a loaded, checked list of rules. The zero Set has no rules.
type Set struct {
	rules []compiled
}

type compiled struct {
	Rule
	re *regexp.Regexp
}

// Problem is why a rule did not load: its name (or its position) and what
// is wrong, for the caller's error envelope.
type Problem struct {
	Rule    string
	Message string
}

func (p *Problem) Error() string { return "rule " + strconv.Quote(p.Rule) + ": " + p.Message }

// Load checks every rule — its name, decision and matcher, then its own
// match and not_match examples — and returns the set, or the first
// problem. The order of the rules is kept: the first rule that matches
// decides.
func Load(rs []Rule) (Set, error) {
	var s Set
	seen := map[string]bool{}
	for i, r := range rs {
		name := r.Name
		if name == "" {
			name = "#" + strconv.Itoa(i+1)
		}
		bad := func(msg string) (Set, error) { return Set{}, &Problem{Rule: name, Message: msg} }
		switch {
		case r.Name == "" || len(r.Name) > 64 || strings.IndexFunc(r.Name, func(c rune) bool {
			return !(c == '-' || c == '_' || c == '.' || unicode.IsLetter(c) || unicode.IsDigit(c))
		}) >= 0:
			return bad("a rule needs a name of 1 to 64 letters, digits, '-', '_' or '.'")
		case seen[r.Name]:
			return bad("two rules have this name")
		case r.Decision != Allow && r.Decision != Ask && r.Decision != Forbid:
			return bad("decision must be allow, ask or forbid, got " + strconv.Quote(string(r.Decision)))
		case (len(r.Prefix) == 0) == (r.Pattern == ""):
			return bad("a rule has exactly one of prefix (a list of words) or pattern (a regular expression)")
		case len(r.Match) == 0:
			return bad("a rule needs at least one match example, a command it must match")
		}
		for _, w := range r.Prefix {
			if strings.TrimSpace(w) == "" || strings.ContainsFunc(w, unicode.IsSpace) {
				return bad("each prefix element is one word, got " + strconv.Quote(w))
			}
		}
		for _, t := range r.Tiers {
			if !knownTier(t) {
				return bad("unknown tier " + strconv.Quote(t) + " in tiers (read-only, workspace-write, danger-full-access)")
			}
		}
		c := compiled{Rule: r}
		if r.Pattern != "" {
			re, err := regexp.Compile(`^(?:` + r.Pattern + `)$`)
			if err != nil {
				return bad("pattern does not compile: " + err.Error())
			}
			c.re = re
		}
		for _, m := range r.Match {
			if r.Decision == Allow && Compound(m) {
				return bad("its match example " + strconv.Quote(m) + " is a compound command (separators, pipes, quotes, variables…), which an allow rule never matches")
			}
			if !c.matches(m) {
				return bad("its match example " + strconv.Quote(m) + " does not match it")
			}
		}
		for _, m := range r.NotMatch {
			if c.matches(m) {
				return bad("its not_match example " + strconv.Quote(m) + " matches it")
			}
		}
		seen[r.Name] = true
		s.rules = append(s.rules, c)
	}
	return s, nil
}

func knownTier(t string) bool {
	return t == "read-only" || t == "workspace-write" || t == "danger-full-access"
}

// Len is how many rules the set holds.
func (s Set) Len() int { return len(s.rules) }

// Verdict is the rule that decided a command, if any.
type Verdict struct {
	Decision Decision
	Rule     string
}

// Decide returns the first rule that matches command for a question for
// tier, or false when none does (a person is asked). An allow rule never
// matches a compound command (see Compound): `git status; curl … | sh` is
// not `git status`. Forbid and ask rules match it as they would any
// command, on its whole text.
func (s Set) Decide(command, tier string) (Verdict, bool) {
	compound := Compound(command)
	for _, r := range s.rules {
		if len(r.Tiers) > 0 && !contains(r.Tiers, tier) {
			continue
		}
		if r.Decision == Allow && compound {
			continue
		}
		if r.matches(command) {
			return Verdict{Decision: r.Decision, Rule: r.Name}, true
		}
	}
	return Verdict{}, false
}

// matches is the rule's matcher alone: for a prefix, the command's
// words start with the prefix's; for a pattern, the whole command
// matches. Surrounding space is ignored.
func (c compiled) matches(command string) bool {
	command = strings.TrimSpace(command)
	if c.re != nil {
		return c.re.MatchString(command)
	}
	words := strings.Fields(command)
	if len(words) < len(c.Prefix) {
		return false
	}
	for i, w := range c.Prefix {
		if words[i] != w {
			return false
		}
	}
	return true
}

// Compound reports whether a command does more than run one program with
// its arguments: it has a shell separator, pipe, redirection, command
// substitution, variable or line break. An allow rule reads a command as
// words, which such a command is not.
func Compound(command string) bool {
	return strings.ContainsAny(command, ";&|<>`$()\n\r\\{}*?~!#'\"")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
