package approvals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
)

// DigestPrefix starts every shown digest, naming its hash.
const DigestPrefix = "sha256:"

// Shown is exactly what every answering medium shows of a question (the
// CLI's prompts, approvals watch, the inbox, the approvals page): who asks,
// for which call of which session, from which tier to which, why, and the
// whole command. An answer is bound to its digest (docs/approvals.md,
// "What the person saw").
type Shown struct {
	ID        string
	SessionID string
	Requester string
	CallID    string
	From      Tier
	To        Tier
	Preview   string
	Reason    string
}

// Shown is what an answering medium shows of a.
func (a Approval) Shown() Shown {
	return Shown{ID: a.ID, SessionID: a.SessionID, Requester: a.Requester, CallID: a.CallID,
		From: a.From, To: a.To, Preview: a.Preview, Reason: a.Reason}
}

// Shown is what an answering medium shows of a question frame; it is the
// approval's own when the frame carries the requester (frames written
// since the requester is on them).
func (f Frame) Shown() Shown {
	return Shown{ID: f.RequestID, SessionID: f.SessionID, Requester: f.Requester, CallID: f.CallID,
		From: f.From, To: f.To, Preview: f.Preview, Reason: f.Reason}
}

// ShownDigest is the digest of what is shown of a question:
// "sha256:" and the hex SHA-256 of a canonical encoding of its fields,
// each as its name, its length in bytes and its bytes, in a fixed order.
// The lengths make the encoding unambiguous: no two different questions
// encode alike, however their texts are split.
func ShownDigest(s Shown) string {
	return digest("dont-question-v1",
		"id", s.ID, "session", s.SessionID, "requester", s.Requester, "call", s.CallID,
		"from", string(s.From), "to", string(s.To), "preview", s.Preview, "reason", s.Reason)
}

// HeldDigest is the digest of what is shown of a held call (a
// confirmation): its id, tool, arguments (as canonical JSON: object keys
// sorted, as encoding/json writes maps) and who asked.
func HeldDigest(id, tool string, args map[string]any, requester string) string {
	b, err := json.Marshal(args)
	if err != nil {
		b = []byte("!" + err.Error()) // never equal to a valid encoding
	}
	return digest("dont-held-call-v1", "id", id, "tool", tool, "args", string(b), "requester", requester)
}

// DigestMatches reports whether a digest given by an answer is the one of
// what is shown now.
func DigestMatches(given, current string) bool {
	return given != "" && strings.EqualFold(given, current)
}

func digest(domain string, fields ...string) string {
	var b strings.Builder
	b.WriteString(domain)
	b.WriteByte('\n')
	for _, f := range fields {
		b.WriteString(strconv.Itoa(len(f)))
		b.WriteByte(':')
		b.WriteString(f)
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return DigestPrefix + hex.EncodeToString(sum[:])
}
