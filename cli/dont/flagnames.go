package main

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
)

// apiParam is a parameter named in an error message the way the service
// names it: its API spelling in backticks (`request_id`). HTTP and MCP
// callers read it so; the CLI names it as its flag (--request-id).
var apiParam = regexp.MustCompile("`([a-z][a-z0-9_]*)`")

// flagNamed is msg with each parameter the service named in backticks
// written as the CLI's flag for it.
func flagNamed(msg string) string {
	if !strings.Contains(msg, "`") {
		return msg
	}
	return apiParam.ReplaceAllStringFunc(msg, func(m string) string {
		return "--" + strings.ReplaceAll(strings.Trim(m, "`"), "_", "-")
	})
}

// withFlagNames is env with its error message naming flags, for a person
// or program at the CLI; any other envelope is returned as it is.
func withFlagNames(env envelope.Envelope) envelope.Envelope {
	if env.OK || !strings.Contains(string(env.Data), "`") {
		return env
	}
	var e errs.Error
	if json.Unmarshal(env.Data, &e) != nil {
		return env
	}
	e.Message = flagNamed(e.Message)
	if b, err := json.Marshal(&e); err == nil {
		env.Data = b
	}
	return env
}
