package main

import (
	"strconv"
	"time"

	"github.com/dont-cli/dont/cli/dont/render"
	"github.com/dont-cli/dont/internal/envelope"
	"golang.org/x/term"
)

// renderOptions is how this invocation renders for a person: the wall
// clock and the local zone, the terminal's width (else $COLUMNS, else
// 100) and colour per stream (styles).
func (a *app) renderOptions() render.Options {
	st := a.styles()
	o := render.Options{Now: time.Now(), Location: time.Local, Color: st.out, ErrColor: st.err}
	if f, ok := a.stdout.(interface{ Fd() uintptr }); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			o.Width = w
		}
	}
	if o.Width == 0 {
		o.Width, _ = strconv.Atoi(a.getenv("COLUMNS"))
	}
	return o
}

// renderHuman prints an envelope for a person (package render): its data
// on stdout, its warnings, hints and errors on stderr.
func (a *app) renderHuman(env envelope.Envelope) {
	render.Envelope(a.stdout, a.stderr, env, a.renderOptions())
}
