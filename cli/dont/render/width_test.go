package render

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode"
)

// cols counts terminal columns independently of the code under test:
// the Han, Hiragana and Katakana of these tests take two, the rest one.
func cols(s string) int {
	n := 0
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// A CJK character takes two terminal columns: a line of them wraps
// within the width, and every character is kept.
func TestACJKLineWrapsWithinTheWidth(t *testing.T) {
	text := strings.Repeat("漢字テスト", 30) // 150 characters, 300 columns
	lines := Wrap("  reason: ", "          ", text, 60)
	var joined strings.Builder
	for i, l := range lines {
		if w := cols(l); w > 60 {
			t.Errorf("line %d takes %d columns, more than 60: %q", i, w, l)
		}
		if i == 0 {
			joined.WriteString(strings.TrimPrefix(l, "  reason: "))
		} else {
			joined.WriteString(strings.TrimPrefix(l, "          "))
		}
	}
	if joined.String() != text {
		t.Errorf("wrapping changed the text:\n%s", strings.Join(lines, "\n"))
	}
	if len(lines) < 6 {
		t.Errorf("%d lines for 300 columns at 60: counted characters, not columns", len(lines))
	}
}

// Table columns align by terminal columns: a CJK cell pads the next
// column to the same place as an ASCII one, and the last column is cut
// within the terminal's width.
func TestATableWithCJKTextAlignsAndFitsTheTerminal(t *testing.T) {
	var out bytes.Buffer
	p := &printer{w: &out, o: Options{Now: time.Now(), Width: 40}}
	p.table("", []string{"NAME", "NOTE"}, [][]cell{
		{c("ascii"), c("short")},
		{c("日本語の名前"), c(strings.Repeat("長い説明", 20))},
	})
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	col := -1
	for _, l := range lines {
		if w := cols(l); w > 40 {
			t.Errorf("%q takes %d columns, more than 40", l, w)
		}
		// The second column starts after the first cell and its padding.
		fields := strings.SplitN(l, "  ", 2)
		start := cols(fields[0]) + cols(fields[1]) - cols(strings.TrimLeft(fields[1], " ")) + 2
		if col == -1 {
			col = start
		} else if start != col {
			t.Errorf("%q: the second column starts at %d, not %d", l, start, col)
		}
	}
}
