package httpapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/dont-cli/dont/internal/visible"
)

// approvalsPage is the approver's web page: one static file that speaks
// the same API as every other client (frames long-poll, approve, refuse),
// with the script names of package visible put in, so that it marks
// mixed-script words by the same rule. Made on first use: every CLI
// start links this package, few serve the page.
var approvalsPage = sync.OnceValue(func() []byte {
	names, _ := json.Marshal(visible.ScriptNames())
	return bytes.Replace(approvalsPageSource, []byte("/*script-names*/[]"), names, 1)
})

//go:embed web/approvals.html
var approvalsPageSource []byte

func (s *server) approvalsPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(approvalsPage())
}
