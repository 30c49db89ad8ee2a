//go:build startuponly

package main

import "os"

// Built only by bench/coldstart (-tags startuponly): the floor's start-up
// alone, its packages initialised and nothing run (cli/dont's
// startuponly.go is the same for dont).
func init() { os.Exit(0) }
