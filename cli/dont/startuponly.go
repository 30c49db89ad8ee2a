//go:build startuponly

package main

import "os"

// Built only by bench/coldstart (-tags startuponly): Go initialises every
// package a binary links before main, and package main's init functions
// run after all of them, so this build exits once everything dont links
// is initialised and before any command runs. Timed beside the floor
// built alike, it says how much of a cold `dont show` is start-up alone
// (bench/coldstart's start-up bound).
func init() { os.Exit(0) }
