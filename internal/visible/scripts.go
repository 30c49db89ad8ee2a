package visible

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// Mixed-script words. A word whose letters come from scripts that are not
// written together — Latin with a Cyrillic or Greek look-alike, as in
// "pаypal" with a Cyrillic а — reads as a word it is not. Line and Text
// mark such a word by escaping every letter of it that is not of the
// word's main script as \uHHHH (\UHHHHHHHH above U+FFFF): "p\u0430ypal".
// That is the escape format's own escape of the same character, so the
// rendering still reads back as the exact original.
//
// A word is a run of letters, marks and decimal digits. Its scripts are
// those of its letters (Unicode's Script property, from package unicode),
// leaving out Common and Inherited. It is mixed when it has two or more
// and they are not all of one combination that is written together
// (Unicode TS #39's "highly restrictive" level): Latin, Han, Hiragana and
// Katakana; Latin, Han and Bopomofo; Latin, Han and Hangul. Its main
// script is the one most of its letters are of (the earlier one on a tie).

// together are the combinations of scripts written together in one word.
var together = [][]string{
	{"Latin", "Han", "Hiragana", "Katakana"},
	{"Latin", "Han", "Bopomofo"},
	{"Latin", "Han", "Hangul"},
}

// ScriptNames lists the scripts the marking tells apart (package
// unicode's, without Common and Inherited), sorted: the approvals page
// reads it to apply the same rule.
func ScriptNames() []string {
	out := make([]string, 0, len(unicode.Scripts))
	for name := range unicode.Scripts {
		if name != "Common" && name != "Inherited" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// scriptOf is the script of letter r, or "" for Common, Inherited or none.
func scriptOf(r rune) string {
	if r < 0x80 {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return "Latin"
		}
		return ""
	}
	for name, table := range unicode.Scripts {
		if unicode.Is(table, r) {
			if name == "Common" || name == "Inherited" {
				return ""
			}
			return name
		}
	}
	return ""
}

func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r)
}

// MixedScript reports whether s has a word that mixes scripts (which
// Line and Text mark).
func MixedScript(s string) bool { return len(marked(s)) > 0 }

// marked returns the byte offsets in s of the letters to mark: those of
// a mixed-script word that are not of its main script. nil when none.
func marked(s string) map[int]bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return nil // one script at most: Latin
	}
	var out map[int]bool
	var word []letter
	flush := func() {
		if len(word) > 1 {
			for at := range markWord(word) {
				if out == nil {
					out = map[int]bool{}
				}
				out[at] = true
			}
		}
		word = word[:0]
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1, !wordRune(r):
			flush()
		case unicode.IsLetter(r):
			if sc := scriptOf(r); sc != "" {
				word = append(word, letter{at: i, script: sc})
			}
		}
		i += n
	}
	flush()
	return out
}

// letter is one letter of a word: where it is and its script.
type letter struct {
	at     int
	script string
}

// markWord returns the offsets of the letters of word to mark, if the
// word mixes scripts not written together.
func markWord(word []letter) map[int]bool {
	count := map[string]int{}
	var order []string
	for _, l := range word {
		if count[l.script] == 0 {
			order = append(order, l.script)
		}
		count[l.script]++
	}
	if len(order) < 2 || writtenTogether(order) {
		return nil
	}
	main := order[0]
	for _, sc := range order[1:] {
		if count[sc] > count[main] {
			main = sc
		}
	}
	out := map[int]bool{}
	for _, l := range word {
		if l.script != main {
			out[l.at] = true
		}
	}
	return out
}

func writtenTogether(scripts []string) bool {
	for _, combo := range together {
		all := true
		for _, sc := range scripts {
			found := false
			for _, c := range combo {
				if c == sc {
					found = true
					break
				}
			}
			if !found {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}
