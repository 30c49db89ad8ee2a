//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package main

import "errors"

// echoOff: a passphrase is read only where the terminal's echo can be
// turned off.
func echoOff(int) (func(), error) {
	return nil, errors.New("this system's terminal echo cannot be turned off by dont")
}
