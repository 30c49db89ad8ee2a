package passphrase

import (
	"bytes"
	"errors"
	"testing"
)

// Under Default and under Least: Verify reads the record's own
// parameters, so the near misses run at the least cost too (each guess
// at Default costs 64 MiB and a quarter of a CPU second).
func TestOnlyTheRightPassphraseVerifies(t *testing.T) {
	r, err := New("Ada Lovelace", []byte("correct horse battery"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Verify([]byte("correct horse battery")) {
		t.Fatal("the passphrase set does not verify")
	}
	if r.Verify([]byte("Correct horse battery")) {
		t.Fatal("a near miss verifies")
	}
	cheap, err := NewWith("Ada Lovelace", []byte("correct horse battery"), Least)
	if err != nil {
		t.Fatal(err)
	}
	if !cheap.Verify([]byte("correct horse battery")) {
		t.Fatal("the passphrase set at the least cost does not verify")
	}
	for _, wrong := range []string{"", "y", "correct horse batter", "correct horse battery\n", "Correct horse battery"} {
		if cheap.Verify([]byte(wrong)) {
			t.Fatalf("%q verifies", wrong)
		}
	}
}

func TestTheRecordIsASlowSaltedHashNeverThePassphrase(t *testing.T) {
	secret := []byte("correct horse battery")
	a, _ := New("ada", secret)
	b, _ := New("ada", secret)
	raw, err := a.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, secret) || bytes.Contains(raw, []byte("Y29ycmVjdCBob3JzZSBiYXR0ZXJ5")) {
		t.Fatalf("the record holds the passphrase: %s", raw)
	}
	if a.Algorithm != "argon2id" || a.Params != Default || a.Params.MemoryKiB < 64*1024 || a.Params.Time < 3 {
		t.Fatalf("record parameters %+v %s", a.Params, a.Algorithm)
	}
	if bytes.Equal(a.Salt, b.Salt) || bytes.Equal(a.Hash, b.Hash) {
		t.Fatal("two records of one passphrase share a salt or a hash")
	}
	back, err := Parse(raw)
	if err != nil || !back.Verify(secret) || back.Name != "ada" {
		t.Fatalf("parsed back: %+v %v", back, err)
	}
}

func TestARecordWithWeakenedParametersIsNotRead(t *testing.T) {
	r, _ := New("ada", []byte("correct horse battery"))
	weak := r
	weak.Params.MemoryKiB = 8
	weak.Hash = derive([]byte("correct horse battery"), r.Salt, weak.Params)
	raw, _ := weak.Marshal()
	if _, err := Parse(raw); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("a weak record parsed: %v", err)
	}
	if weak.Verify([]byte("correct horse battery")) {
		t.Fatal("a weak record verifies")
	}
	other := r
	other.Algorithm = "plain"
	if other.Verify([]byte("correct horse battery")) {
		t.Fatal("a record of another algorithm verifies")
	}
	if _, err := Parse([]byte(`{"version":1}`)); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("an empty record parsed: %v", err)
	}
}

func TestNamesAndPassphrasesAreChecked(t *testing.T) {
	for _, bad := range []string{"", "   ", "ada\x1b[2K", "a\u202ed", "ad\na"} {
		if _, err := New(bad, []byte("correct horse battery")); !errors.Is(err, ErrBadName) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	if _, err := New("ada", []byte("short")); !errors.Is(err, ErrTooShort) {
		t.Errorf("a short passphrase: %v", err)
	}
	if _, err := New("ada", bytes.Repeat([]byte("a"), 2000)); !errors.Is(err, ErrTooLong) {
		t.Errorf("a long passphrase: %v", err)
	}
}
