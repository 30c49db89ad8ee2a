package main

import (
	"fmt"
	"strconv"

	"github.com/dont-cli/dont/internal/httpapi"
)

// The API function's rate limits (docs/security.md, "Rate limits"): each
// warm instance keeps its own buckets, per token, per project and in
// total, like `dont serve`'s --rate, --burst, --project-rate and
// --total-rate. Unset: httpapi's defaults.
const (
	EnvRate         = "DONT_RATE"
	EnvBurst        = "DONT_BURST"
	EnvProjectRate  = "DONT_PROJECT_RATE"
	EnvProjectBurst = "DONT_PROJECT_BURST"
	EnvTotalRate    = "DONT_TOTAL_RATE"
	EnvTotalBurst   = "DONT_TOTAL_BURST"
)

// limits are the handler's options with the rate limits of the
// function's environment; a value that is not a number fails the start.
func limits(getenv func(string) string, o httpapi.Options) (httpapi.Options, error) {
	rates := []struct {
		name string
		to   *float64
	}{{EnvRate, &o.RatePerSecond}, {EnvProjectRate, &o.ProjectPerSecond}, {EnvTotalRate, &o.TotalPerSecond}}
	for _, r := range rates {
		if v := getenv(r.name); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return o, fmt.Errorf("%s=%q: requests per second, a number (negative: no limit)", r.name, v)
			}
			*r.to = f
		}
	}
	bursts := []struct {
		name string
		to   *int
	}{{EnvBurst, &o.Burst}, {EnvProjectBurst, &o.ProjectBurst}, {EnvTotalBurst, &o.TotalBurst}}
	for _, b := range bursts {
		if v := getenv(b.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return o, fmt.Errorf("%s=%q: a count of requests, 0 or more", b.name, v)
			}
			*b.to = n
		}
	}
	return o, nil
}
