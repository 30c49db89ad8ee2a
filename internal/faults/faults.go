// Package faults injects the failures a client of DynamoDB and SQS meets in
// production into its HTTP traffic: 5xx answers, throttling errors with the
// bodies and statuses the services send, latency, connection resets, and
// the worst case — a write that commits but whose response is lost. It is
// an http.RoundTripper (for clients built in-process) and a reverse proxy
// on 127.0.0.1 (for processes that only take an endpoint URL).
package faults

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Kind is a kind of fault.
type Kind string

// The faults.
const (
	// InternalError answers 500 InternalServerError without forwarding.
	InternalError Kind = "500-internal-server-error"
	// Unavailable answers 503 ServiceUnavailable without forwarding.
	Unavailable Kind = "503-service-unavailable"
	// ThroughputExceeded answers 400 ProvisionedThroughputExceededException.
	ThroughputExceeded Kind = "400-provisioned-throughput-exceeded"
	// Throttling answers 400 ThrottlingException.
	Throttling Kind = "400-throttling"
	// Latency delays the request, then forwards it.
	Latency Kind = "latency"
	// ResetBefore resets the connection before the request reaches the server.
	ResetBefore Kind = "connection-reset-before-send"
	// LostResponse forwards the request (it commits), then resets the
	// connection instead of returning the response.
	LostResponse Kind = "lost-response-after-commit"
)

// Kinds lists every fault, in a stable order.
var Kinds = []Kind{InternalError, Unavailable, ThroughputExceeded, Throttling, Latency, ResetBefore, LostResponse}

// Rule injects Kind into a fraction Rate of the requests whose operation
// (the X-Amz-Target action, e.g. "TransactWriteItems") is in Ops (all
// operations when Ops is empty).
type Rule struct {
	Kind  Kind
	Rate  float64
	Ops   []string
	Delay time.Duration // Latency: up to this long (uniform)
}

func (r Rule) matches(op string) bool {
	if len(r.Ops) == 0 {
		return true
	}
	for _, o := range r.Ops {
		if o == op {
			return true
		}
	}
	return false
}

// Writes are the DynamoDB operations that change data.
var Writes = []string{"TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "SendMessage", "DeleteMessage"}

// Mixed is a plan with every fault kind at rates a client with bounded
// retries must survive.
func Mixed() []Rule {
	return []Rule{
		{Kind: LostResponse, Rate: 0.04, Ops: Writes},
		{Kind: ResetBefore, Rate: 0.02},
		{Kind: InternalError, Rate: 0.02},
		{Kind: Unavailable, Rate: 0.02},
		{Kind: ThroughputExceeded, Rate: 0.03},
		{Kind: Throttling, Rate: 0.03},
		{Kind: Latency, Rate: 0.05, Delay: 20 * time.Millisecond},
	}
}

// Transport injects faults into the requests it forwards to Base.
type Transport struct {
	Base  http.RoundTripper
	Rules []Rule

	enabled  atomic.Bool
	mu       sync.Mutex
	rng      *rand.Rand
	requests atomic.Int64
	counts   sync.Map // Kind -> *atomic.Int64
	byOp     sync.Map // Kind+" "+op -> *atomic.Int64
}

// New returns an enabled Transport over base (http.DefaultTransport if
// nil) with a seeded random source, so a run can be repeated.
func New(base http.RoundTripper, seed uint64, rules ...Rule) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{Base: base, Rules: rules, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	t.enabled.Store(true)
	return t
}

// Enable turns injection on or off (setup and final checks run without).
func (t *Transport) Enable(on bool) { t.enabled.Store(on) }

// Operation names the request's action from its X-Amz-Target header.
func Operation(r *http.Request) string {
	target := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		return target[i+1:]
	}
	return target
}

func (t *Transport) pick(op string) (Rule, bool) {
	if !t.enabled.Load() {
		return Rule{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.Rules {
		if r.matches(op) && t.rng.Float64() < r.Rate {
			if r.Kind == Latency && r.Delay > 0 {
				r.Delay = time.Duration(t.rng.Int64N(int64(r.Delay)) + 1)
			}
			return r, true
		}
	}
	return Rule{}, false
}

func (t *Transport) count(k Kind, op string) {
	c, _ := t.counts.LoadOrStore(k, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	c, _ = t.byOp.LoadOrStore(string(k)+" "+op, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
}

// Counts returns how many faults of each kind were injected.
func (t *Transport) Counts() map[Kind]int64 {
	out := map[Kind]int64{}
	t.counts.Range(func(k, v any) bool { out[k.(Kind)] = v.(*atomic.Int64).Load(); return true })
	return out
}

// CountsByOperation returns "kind operation" -> injected.
func (t *Transport) CountsByOperation() map[string]int64 {
	out := map[string]int64{}
	t.byOp.Range(func(k, v any) bool { out[k.(string)] = v.(*atomic.Int64).Load(); return true })
	return out
}

// Requests is how many requests passed through.
func (t *Transport) Requests() int64 { return t.requests.Load() }

// Summary is one line: requests and faults by kind.
func (t *Transport) Summary() string {
	c := t.Counts()
	parts := []string{fmt.Sprintf("%d requests", t.Requests())}
	var total int64
	for _, k := range Kinds {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c[k]))
		total += c[k]
	}
	parts = append(parts, fmt.Sprintf("total=%d", total))
	return strings.Join(parts, " ")
}

// ErrReset is what a reset connection looks like to the client.
func ErrReset() error {
	return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.requests.Add(1)
	op := Operation(req)
	r, ok := t.pick(op)
	if !ok {
		return t.Base.RoundTrip(req)
	}
	t.count(r.Kind, op)
	switch r.Kind {
	case Latency:
		select {
		case <-time.After(r.Delay):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		return t.Base.RoundTrip(req)
	case ResetBefore:
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, ErrReset()
	case LostResponse:
		resp, err := t.Base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, ErrReset()
	}
	if req.Body != nil {
		req.Body.Close()
	}
	return ErrorResponse(req, r.Kind), nil
}

// ErrorResponse is the answer DynamoDB (JSON 1.0) or SQS (JSON protocol)
// gives for an error fault: the status, the __type the SDKs read the code
// from, and the x-amzn-query-error header SQS adds.
func ErrorResponse(req *http.Request, k Kind) *http.Response {
	sqs := strings.HasPrefix(req.Header.Get("X-Amz-Target"), "AmazonSQS.")
	status, typ, code, msg := 0, "", "", ""
	switch k {
	case InternalError:
		status, typ, code, msg = 500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "InternalServerError", "Internal server error"
		if sqs {
			typ, code, msg = "com.amazonaws.sqs#InternalError", "InternalError", "We encountered an internal error. Please try again."
		}
	case Unavailable:
		status, typ, code, msg = 503, "com.amazon.coral.availability#ServiceUnavailableException", "ServiceUnavailable", "Service unavailable"
	case ThroughputExceeded:
		status, typ, code = 400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", "ProvisionedThroughputExceededException"
		msg = "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."
	case Throttling:
		status, typ, code, msg = 400, "com.amazon.coral.availability#ThrottlingException", "ThrottlingException", "Rate of requests exceeds the allowed throughput."
	}
	body := fmt.Sprintf(`{"__type":%q,"message":%q}`, typ, msg)
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Requestid", fmt.Sprintf("fault-%d", time.Now().UnixNano()))
	if sqs {
		h.Set("X-Amzn-Query-Error", code+";Sender")
	}
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)), Request: req,
	}
}

// SortedCounts formats counts in Kinds order, for tables.
func SortedCounts(c map[string]int64) []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s=%d", k, c[k])
	}
	return out
}
