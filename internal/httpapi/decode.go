package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/dont-cli/dont/internal/errs"
)

// readBody reads at most max bytes; a larger body is refused, not truncated.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, errs.E(UnsupportedMediaType, "Content-Type must be application/json, got "+quote(ct))
		}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errs.E(BodyTooLarge, "the request body exceeds "+strconv.FormatInt(max, 10)+" bytes")
	}
	if err != nil {
		return nil, errs.E(BadJSON, "cannot read the request body").Wrap(err)
	}
	return b, nil
}

// decodeCall parses {"args": {…}}: one JSON object, no unknown fields, no
// trailing data, args (when present) an object. An empty body, or a body
// without args, means no arguments; "args": null or any other non-object
// is refused as the schema says (invalid-argument, 400).
func decodeCall(body []byte) (callRequest, error) {
	var req callRequest
	if len(bytes.TrimSpace(body)) == 0 {
		req.Args = map[string]any{}
		return req, nil
	}
	var wire struct {
		Args         json.RawMessage `json:"args"`
		CLIConfirmed bool            `json:"cli_confirmed,omitempty"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wire); err != nil {
		return req, errs.E(BadJSON, "the body is not a valid call: "+err.Error()).Unmet(`body is {"args": {…}}`)
	}
	if dec.More() {
		return req, errs.E(BadJSON, "trailing data after the JSON object").Unmet("exactly one JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, errs.E(BadJSON, "trailing data after the JSON object").Unmet("exactly one JSON object")
	}
	req.CLIConfirmed = wire.CLIConfirmed
	req.Args = map[string]any{}
	if wire.Args == nil { // absent
		return req, nil
	}
	if t := bytes.TrimSpace(wire.Args); len(t) == 0 || t[0] != '{' {
		return req, errs.E(errs.InvalidArgument, "args must be a JSON object, got "+quote(string(t)),
			errs.Step{Command: `curl -X POST $DONT_ENDPOINT/v1/tools/<tool> -d '{"args":{…}}'`, Description: "send the arguments as an object ({} for none), or leave args out"}).
			Unmet("args is an object")
	}
	args := json.NewDecoder(bytes.NewReader(wire.Args))
	args.UseNumber()
	if err := args.Decode(&req.Args); err != nil {
		return req, errs.E(BadJSON, "args is not a valid object: "+err.Error()).Unmet("args is an object")
	}
	return req, nil
}
