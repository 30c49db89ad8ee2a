package render

// Palette is the minimal colour of human output; the zero Palette prints
// plain text (NO_COLOR, --plain, TERM=dumb, not a terminal).
type Palette struct{ On bool }

func (p Palette) sgr(code, s string) string {
	if !p.On || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Bold, Dim, Red, Green and Yellow style s when the palette is on.
func (p Palette) Bold(s string) string   { return p.sgr("1", s) }
func (p Palette) Dim(s string) string    { return p.sgr("2", s) }
func (p Palette) Red(s string) string    { return p.sgr("31", s) }
func (p Palette) Green(s string) string  { return p.sgr("32", s) }
func (p Palette) Yellow(s string) string { return p.sgr("33", s) }

// Status styles an entity's status: verified and locked green, doubted
// red, stale yellow, ignored dim.
func (p Palette) Status(s string) string {
	switch s {
	case "verified", "locked":
		return p.Green(s)
	case "doubted":
		return p.Red(s)
	case "stale":
		return p.Yellow(s)
	case "ignored":
		return p.Dim(s)
	}
	return s
}
