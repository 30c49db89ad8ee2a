package service

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"unicode/utf8"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/ids"
)

// CursorInvalid: a page's cursor is not one this listing handed out (from
// another query or project, or altered). Nothing is read.
const CursorInvalid errs.Code = "cursor-invalid"

// Page sizes of the paginated reads (docs/design.md, "Paginated reads"):
// a page of DefaultPageLimit short claims is a few tens of kilobytes, one
// of MaxPageLimit stays far below a Lambda response's 6 MB.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// Page asks for one page of a listing: at most Limit items (0: the
// default) after the position Cursor names ("": the first page).
type Page struct {
	Limit  int
	Cursor string
}

// cursorDigestSize is the bytes of the digest a cursor opens with.
const cursorDigestSize = 16

// pageQuery is one listing's query, which its cursors are bound to: the
// project and the listing and its filters, spelled by the caller.
type pageQuery struct {
	project string
	query   string
}

// digest binds a position to the query: SHA-256 over the project, the
// query and the position. A cursor grants nothing its holder could not
// read by listing from the start, so it is not keyed (a key would cost a
// secret's read on every page, a KMS decrypt on AWS); the digest makes a
// cursor of another query or project, or one with altered bytes, fail
// the check instead of naming a position in the wrong listing.
func (q pageQuery) digest(after string) []byte {
	h := sha256.New()
	for _, part := range []string{"dont-cursor-v1", q.project, q.query, after} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{0})
		h.Write([]byte(part))
	}
	return h.Sum(nil)[:cursorDigestSize]
}

// cursor is the opaque text that names the position after the item with
// the sort key after.
func (q pageQuery) cursor(after string) string {
	return base64.RawURLEncoding.EncodeToString(append(q.digest(after), after...))
}

// open checks p against the query and returns its limit and the position
// its cursor names ("" for the first page). valid says whether a position
// is a sort key of this listing at all. tool names the listing for the
// error's remediation.
func (q pageQuery) open(p Page, tool string, valid func(after string) bool) (limit int, after string, err error) {
	limit = p.Limit
	if limit == 0 {
		limit = DefaultPageLimit
	}
	if limit < 1 || limit > MaxPageLimit {
		return 0, "", errs.E(errs.InvalidArgument, "limit must be between 1 and "+strconv.Itoa(MaxPageLimit)).
			Unmet("1 <= limit <= " + strconv.Itoa(MaxPageLimit))
	}
	if p.Cursor == "" {
		return limit, "", nil
	}
	refuse := func(why string) (int, string, error) { return 0, "", cursorRefused(tool, why) }
	raw, derr := base64.RawURLEncoding.DecodeString(p.Cursor)
	if derr != nil || len(raw) <= cursorDigestSize || len(p.Cursor) > 512 {
		return refuse("it is not well-formed")
	}
	after = string(raw[cursorDigestSize:])
	if !bytes.Equal(raw[:cursorDigestSize], q.digest(after)) {
		return refuse("it was made for another query or project, or altered")
	}
	if !utf8.ValidString(after) || !valid(after) {
		return refuse("it names no position of this listing")
	}
	return limit, after, nil
}

// cursorRefused is the error for a cursor the listing tool never gave
// out, and why.
func cursorRefused(tool, why string) error {
	e := errs.E(CursorInvalid, "the cursor is not one this listing gave out: "+why).Unmet("a cursor is the next_cursor of the same listing, unchanged")
	e.Args = map[string]string{"kind": tool}
	return e
}

// invalidPosition is the error for a cursor whose position the store
// could not read (ErrInvalidPosition): its digest matched, so it was
// made by hand.
func invalidPosition(tool string) error {
	return cursorRefused(tool, "it names no position of this listing")
}

// entityKey says whether after is an entity's id.
func entityKey(after string) bool {
	k := ids.Kind(after)
	return k == ids.Claim || k == ids.Term
}

// spawnKey says whether after is a spawn's id.
func spawnKey(after string) bool { return ids.Kind(after) == ids.Spawn }
