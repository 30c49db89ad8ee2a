package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The service's limits.
const (
	maxEntries     = 10
	maxRequestSize = 256 * 1024
	// maxBody bounds what is read of a request: well above the limit, so
	// that an oversized request gets the service's answer, not a cut.
	maxBody = 4 << 20
)

// Entry is one PutEvents entry as the wire carries it.
type Entry struct {
	Source       string   `json:"Source,omitempty"`
	DetailType   string   `json:"DetailType,omitempty"`
	Detail       string   `json:"Detail,omitempty"`
	EventBusName string   `json:"EventBusName,omitempty"`
	Resources    []string `json:"Resources,omitempty"`
	Time         *float64 `json:"Time,omitempty"`
	TraceHeader  string   `json:"TraceHeader,omitempty"`
}

// Accepted is an accepted entry with the id the stand-in gave it.
type Accepted struct {
	Entry
	ID   string    `json:"id"`
	Bus  string    `json:"bus"`
	Seen time.Time `json:"received_at"`
}

// Standin is the EventBridge-compatible handler.
type Standin struct {
	mu       sync.Mutex
	accepted []Accepted
	busARN   string
}

// New returns a stand-in whose default bus is in region and account.
func New(region, account string) *Standin {
	return &Standin{busARN: "arn:aws:events:" + region + ":" + account + ":event-bus/default"}
}

type resultEntry struct {
	EventID      string `json:"EventId,omitempty"`
	ErrorCode    string `json:"ErrorCode,omitempty"`
	ErrorMessage string `json:"ErrorMessage,omitempty"`
}

func (s *Standin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/_standin/events" {
		s.mu.Lock()
		b, _ := json.Marshal(s.accepted)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	if r.Method != http.MethodPost || !strings.HasPrefix(target, "AWSEvents.") {
		fault(w, http.StatusBadRequest, "UnknownOperationException", "")
		return
	}
	if target != "AWSEvents.PutEvents" {
		fault(w, http.StatusBadRequest, "UnknownOperationException", "the stand-in serves PutEvents only")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		fault(w, http.StatusRequestEntityTooLarge, "ValidationException", "Total size of the entries in the request is over the limit.")
		return
	}
	var req struct {
		Entries    []Entry `json:"Entries"`
		EndpointID string  `json:"EndpointId"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		fault(w, http.StatusBadRequest, "SerializationException", "Start of structure or map found where not expected.")
		return
	}
	switch {
	case len(req.Entries) == 0:
		fault(w, http.StatusBadRequest, "ValidationException", "1 validation error detected: Value '[]' at 'entries' failed to satisfy constraint: Member must have length greater than or equal to 1")
		return
	case len(req.Entries) > maxEntries:
		fault(w, http.StatusBadRequest, "ValidationException", "1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length less than or equal to 10")
		return
	}
	total := 0
	for _, e := range req.Entries {
		total += entrySize(e)
	}
	if total > maxRequestSize {
		fault(w, http.StatusBadRequest, "ValidationException", "Total size of the entries in the request is over the limit.")
		return
	}
	out := struct {
		FailedEntryCount int           `json:"FailedEntryCount"`
		Entries          []resultEntry `json:"Entries"`
	}{Entries: []resultEntry{}}
	now := time.Now().UTC()
	s.mu.Lock()
	for _, e := range req.Entries {
		res := s.check(e)
		if res.ErrorCode == "" {
			res.EventID = newID()
			s.accepted = append(s.accepted, Accepted{Entry: e, ID: res.EventID, Bus: "default", Seen: now})
		} else {
			out.FailedEntryCount++
		}
		out.Entries = append(out.Entries, res)
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(out)
}

// check is the per-entry validation: a failed entry fails alone.
func (s *Standin) check(e Entry) resultEntry {
	bad := func(code, msg string) resultEntry { return resultEntry{ErrorCode: code, ErrorMessage: msg} }
	switch {
	case e.Source == "":
		return bad("InvalidArgument", "Parameter Source is not valid. Reason: Source is a required argument.")
	case e.DetailType == "":
		return bad("InvalidArgument", "Parameter DetailType is not valid. Reason: DetailType is a required argument.")
	case e.Detail == "":
		return bad("InvalidArgument", "Parameter Detail is not valid. Reason: Detail is a required argument.")
	case strings.HasPrefix(e.Source, "aws."):
		return bad("NotAuthorizedForSourceException", "Not authorized for the source.")
	}
	var obj map[string]any
	if json.Unmarshal([]byte(e.Detail), &obj) != nil || obj == nil {
		return bad("MalformedDetail", "Detail is malformed.")
	}
	if bus := e.EventBusName; bus != "" && bus != "default" && bus != s.busARN {
		return bad("ResourceNotFoundException", "Event bus "+bus+" does not exist.")
	}
	return resultEntry{}
}

// entrySize is how EventBridge sizes an entry: 14 bytes for Time if
// present, the UTF-8 bytes of Source, DetailType and Detail, and of every
// resource.
func entrySize(e Entry) int {
	n := len(e.Source) + len(e.DetailType) + len(e.Detail)
	if e.Time != nil {
		n += 14
	}
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

func fault(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

func newID() string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
