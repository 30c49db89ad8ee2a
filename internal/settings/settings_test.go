package settings

import (
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/errs"
)

func TestEverySourceOfASettingHoldsItToTheSameRule(t *testing.T) {
	for _, c := range []struct {
		d    Duration
		v    string
		want time.Duration
		ok   bool
	}{
		{SpawnTimeout, "90m", 90 * time.Minute, true},
		{SpawnTimeout, " 24h ", 24 * time.Hour, true},
		{SpawnTimeout, "1ms", time.Millisecond, true},
		{SpawnTimeout, "720h", 720 * time.Hour, true},
		{SpawnTimeout, "721h", 0, false},
		{SpawnTimeout, "0s", 0, false},
		{SpawnTimeout, "0", 0, false},
		{SpawnTimeout, "-1s", 0, false},
		{SpawnTimeout, "soon", 0, false},
		{SpawnTimeout, "", 0, false},
		{ApprovalTimeout, "300ms", 300 * time.Millisecond, true},
		{ApprovalTimeout, "2000h", 2000 * time.Hour, true},
		{ApprovalTimeout, "0", 0, false},
		{SubscriberLease, "20s", 20 * time.Second, true},
		{ApprovalPoll, "fast", 0, false},
		{FrameRetention, "0", 0, true},
		{FrameRetention, "720h", 720 * time.Hour, true},
		{FrameRetention, "-1h", 0, false},
	} {
		got, ok := c.d.Parse(c.v)
		if got != c.want || ok != c.ok {
			t.Errorf("Parse(%q) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
		for name, read := range map[string]func(string) (time.Duration, error){
			"env":      func(v string) (time.Duration, error) { return c.d.FromEnv("DONT_X", v) },
			"config":   func(v string) (time.Duration, error) { return c.d.FromConfig("x", v) },
			"argument": func(v string) (time.Duration, error) { return c.d.FromArgument("x", v) },
		} {
			got, err := read(c.v)
			if (err == nil) != c.ok || got != c.want {
				t.Errorf("%s %q = %v, %v; want %v, ok %v", name, c.v, got, err, c.want, c.ok)
			}
		}
	}
}

// A bad value is an error that says the rule, names the unmet clause and
// says what to run next; its code is the source's.
func TestABadValueSaysTheRuleAndTheRemedy(t *testing.T) {
	for _, c := range []struct {
		err     error
		code    errs.Code
		message string
		clause  string
		command string
	}{
		{fromEnv("DONT_SPAWN_TIMEOUT", "soon"), errs.ConfigInvalid,
			`DONT_SPAWN_TIMEOUT must be a positive Go duration up to 720h (such as 24h), got "soon"`, "0 < DONT_SPAWN_TIMEOUT <= 720h", "export DONT_SPAWN_TIMEOUT=24h"},
		{fromConfig("spawn_timeout", "never"), errs.ConfigInvalid,
			`spawn_timeout must be a positive Go duration up to 720h (such as 24h), got "never"`, "0 < spawn_timeout <= 720h", `spawn_timeout = "24h"  # in .dont/config.toml`},
		{fromArgument("spawn_timeout", "1000h"), errs.InvalidArgument,
			`spawn_timeout must be a positive Go duration up to 720h (such as 24h), got "1000h"`, "0 < spawn_timeout <= 720h", "spawn_timeout=24h"},
		{approval("DONT_APPROVAL_TIMEOUT", "soon"), errs.ConfigInvalid,
			`DONT_APPROVAL_TIMEOUT must be a positive Go duration (such as 120s), got "soon"`, "DONT_APPROVAL_TIMEOUT > 0", "export DONT_APPROVAL_TIMEOUT=120s"},
		{retention("DONT_FRAME_RETENTION", "-1h"), errs.ConfigInvalid,
			`DONT_FRAME_RETENTION must be a positive Go duration, or 0 to turn it off (such as 720h), got "-1h"`, "DONT_FRAME_RETENTION > 0", "export DONT_FRAME_RETENTION=720h"},
	} {
		e := errs.As(c.err)
		if e.Code != c.code || e.Message != c.message || len(e.UnmetClauses) != 1 || e.UnmetClauses[0] != c.clause ||
			len(e.Remediation) == 0 || e.Remediation[0].Command != c.command {
			t.Errorf("got %+v, want code %s, message %q, clause %q, first step %q", e, c.code, c.message, c.clause, c.command)
		}
	}
	step := errs.Step{Command: "run this", Description: "the caller's own"}
	if _, err := SpawnTimeout.FromArgument("spawn_timeout", "soon", step); len(errs.As(err).Remediation) != 1 || errs.As(err).Remediation[0] != step {
		t.Errorf("the caller's remediation was not kept: %+v", err)
	}
}

func fromEnv(name, v string) error      { _, err := SpawnTimeout.FromEnv(name, v); return err }
func fromConfig(key, v string) error    { _, err := SpawnTimeout.FromConfig(key, v); return err }
func fromArgument(name, v string) error { _, err := SpawnTimeout.FromArgument(name, v); return err }
func approval(name, v string) error     { _, err := ApprovalTimeout.FromEnv(name, v); return err }
func retention(name, v string) error    { _, err := FrameRetention.FromEnv(name, v); return err }

func TestAShareOfTheDeadlineLiesStrictlyBetweenZeroAndOne(t *testing.T) {
	for v, ok := range map[string]bool{"0.5": true, " 0.25 ": true, "0.99": true, "0": false, "1": false, "1.5": false, "-0.5": false, "half": false, "NaN": false, "": false} {
		if _, got := ParseShare(v); got != ok {
			t.Errorf("ParseShare(%q) ok = %v, want %v", v, got, ok)
		}
	}
	if _, err := ShareFromSource(KeyApprovalRemindAt, "2"); !errs.Is(err, errs.ConfigInvalid) {
		t.Fatalf("a bad share: %v", err)
	}
	if !IsPersonOnlyEnv(EnvApprovalRemindAt) {
		t.Fatal("DONT_APPROVAL_REMIND_AT is not a person-only variable")
	}
}
