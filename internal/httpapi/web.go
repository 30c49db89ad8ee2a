package httpapi

import (
	_ "embed"
	"net/http"
)

// approvalsPage is the approver's web page: one static file that speaks
// the same API as every other client (frames long-poll, approve, refuse).
//
//go:embed web/approvals.html
var approvalsPage []byte

func (s *server) approvalsPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(approvalsPage)
}
