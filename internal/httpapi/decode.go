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
// trailing data. An empty body means no arguments.
func decodeCall(body []byte) (callRequest, error) {
	var req callRequest
	if len(bytes.TrimSpace(body)) == 0 {
		req.Args = map[string]any{}
		return req, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return req, errs.E(BadJSON, "the body is not a valid call: "+err.Error()).Unmet(`body is {"args": {…}}`)
	}
	if dec.More() {
		return req, errs.E(BadJSON, "trailing data after the JSON object").Unmet("exactly one JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, errs.E(BadJSON, "trailing data after the JSON object").Unmet("exactly one JSON object")
	}
	if req.Args == nil {
		req.Args = map[string]any{}
	}
	return req, nil
}
