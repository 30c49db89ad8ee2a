// Package passphrase is the approver passphrase's record: the person's
// name and an argon2id hash of the passphrase, with its salt and
// parameters beside it. What only a person may do at the embedded CLI
// (answer an escalation, confirm a held call, mint or revoke a token)
// needs the passphrase typed at the controlling terminal; the record is
// how it is checked without being kept (docs/security.md, "What only a
// person may do").
//
// The package holds no files: the CLI keeps the record in the person's
// own folder (internal/personal), outside every workspace.
package passphrase

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Algorithm is the only key derivation a record may name.
const Algorithm = "argon2id"

// Version is the record format.
const Version = 1

// Params are argon2id's cost parameters.
type Params struct {
	Time      uint32 `json:"time"`
	MemoryKiB uint32 `json:"memory_kib"`
	Threads   uint8  `json:"threads"`
	KeyLen    uint32 `json:"key_len"`
}

// Default is RFC 9106's second recommended option (64 MiB, three passes,
// four lanes): a guess costs about a tenth of a second and 64 MiB, so a
// copied record cannot be searched quickly.
var Default = Params{Time: 3, MemoryKiB: 64 * 1024, Threads: 4, KeyLen: 32}

// bounds refuse a record whose parameters make checking either trivial
// (a weak hash someone wrote to be guessed) or ruinous (a record that
// would exhaust the machine).
var (
	minParams = Params{Time: 1, MemoryKiB: 19 * 1024, Threads: 1, KeyLen: 16}
	maxParams = Params{Time: 16, MemoryKiB: 1024 * 1024, Threads: 64, KeyLen: 64}
)

// saltLen is the salt's length in bytes.
const saltLen = 16

// MinLength is the shortest passphrase accepted, in characters.
const MinLength = 8

// maxLength bounds what is hashed.
const maxLength = 1024

// maxName bounds the person's name, in characters.
const maxName = 100

// Record is what is stored: never the passphrase.
type Record struct {
	Version   int    `json:"version"`
	Name      string `json:"name"`
	Algorithm string `json:"algorithm"`
	Params    Params `json:"params"`
	Salt      []byte `json:"salt"`
	Hash      []byte `json:"hash"`
}

// Errors a caller tells apart.
var (
	ErrBadName       = errors.New("the name must be 1 to 100 printable characters, not only spaces")
	ErrTooShort      = fmt.Errorf("a passphrase has at least %d characters", MinLength)
	ErrTooLong       = fmt.Errorf("a passphrase has at most %d bytes", maxLength)
	ErrInvalidRecord = errors.New("the passphrase record is not one this version of dont reads")
)

// CheckName reports whether name may name the person on the records.
func CheckName(name string) error {
	if strings.TrimSpace(name) == "" || utf8.RuneCountInString(name) > maxName || !utf8.ValidString(name) {
		return ErrBadName
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return ErrBadName
		}
	}
	return nil
}

// CheckPassphrase reports whether p may be set as a passphrase.
func CheckPassphrase(p []byte) error {
	switch {
	case len(p) > maxLength:
		return ErrTooLong
	case utf8.RuneCount(p) < MinLength:
		return ErrTooShort
	}
	return nil
}

// New makes the record of name and passphrase p under Default, with a
// fresh random salt.
func New(name string, p []byte) (Record, error) {
	return newWith(name, p, Default)
}

// Least is the cheapest cost a record may carry (Check refuses less).
// Only the CLI's test build hashes with it (cli/dont/faulthooks.go), so
// that its tests do not spend a fifth of a CPU second on every proof.
var Least = minParams

// NewWith is New under params, which must be within the bounds Check
// reads a record with.
func NewWith(name string, p []byte, params Params) (Record, error) {
	r, err := newWith(name, p, params)
	if err != nil {
		return Record{}, err
	}
	return r, r.Check()
}

func newWith(name string, p []byte, params Params) (Record, error) {
	if err := CheckName(name); err != nil {
		return Record{}, err
	}
	if err := CheckPassphrase(p); err != nil {
		return Record{}, err
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return Record{}, err
	}
	return Record{Version: Version, Name: name, Algorithm: Algorithm, Params: params, Salt: salt, Hash: derive(p, salt, params)}, nil
}

func derive(p, salt []byte, params Params) []byte {
	return argon2.IDKey(p, salt, params.Time, params.MemoryKiB, params.Threads, params.KeyLen)
}

// Verify reports whether p is the record's passphrase. A record that
// fails Check never verifies.
func (r Record) Verify(p []byte) bool {
	if r.Check() != nil || len(p) > maxLength {
		return false
	}
	return subtle.ConstantTimeCompare(derive(p, r.Salt, r.Params), r.Hash) == 1
}

// Check reports whether the record is well formed, within the bounds.
func (r Record) Check() error {
	p := r.Params
	switch {
	case r.Version != Version, r.Algorithm != Algorithm, CheckName(r.Name) != nil,
		len(r.Salt) < saltLen, uint32(len(r.Hash)) != p.KeyLen,
		p.Time < minParams.Time || p.Time > maxParams.Time,
		p.MemoryKiB < minParams.MemoryKiB || p.MemoryKiB > maxParams.MemoryKiB,
		p.Threads < minParams.Threads || p.Threads > maxParams.Threads,
		p.KeyLen < minParams.KeyLen || p.KeyLen > maxParams.KeyLen:
		return ErrInvalidRecord
	}
	return nil
}

// Marshal encodes the record (JSON; salt and hash in base64).
func (r Record) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	return append(b, '\n'), err
}

// Parse decodes and checks a record.
func Parse(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrInvalidRecord, err)
	}
	if err := r.Check(); err != nil {
		return Record{}, err
	}
	return r, nil
}
