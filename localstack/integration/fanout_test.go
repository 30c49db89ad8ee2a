package integration_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/dont-cli/dont/internal/ledger"
	sqssched "github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/spawn"
)

// scheduledSweep is one run of the sweep schedule through the sweeper
// bootstrap, as deployed: the scheduled event makes the function send one
// "sweep project p" message per registered project to the work queue
// (SendMessageBatch, ten a request), and the suite, as the work queue's
// event source mapping, receives them in batches of ten, hands each batch
// to the same bootstrap as an SQS event and deletes what it did not report
// failed, until the queue is empty. It returns how many messages the
// scheduled event enqueued and how many sweep messages each project got.
func (s *suite) scheduledSweep(t *testing.T) (int, map[string]int) {
	t.Helper()
	var rep sqssched.SweepReport
	if err := s.sweeper.invoke(ctx, s.scheduledEvent(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Enqueued == 0 || len(rep.Projects) != 0 {
		t.Fatalf("the scheduled event did not fan out to the work queue: enqueued %d, swept in place %d", rep.Enqueued, len(rep.Projects))
	}
	swept := map[string]int{}
	received, empty := 0, 0
	deadline := time.Now().Add(2 * time.Minute)
	// Done when every enqueued message came back and a poll found nothing
	// more (a sweep cut short sends its project's message again).
	for received < rep.Enqueued || empty < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the work queue gave %d of %d sweep messages within 2 minutes", received, rep.Enqueued)
		}
		msgs, err := s.receiveFrom(s.sweepQueueURL, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			empty++
			continue
		}
		empty = 0
		received += len(msgs)
		for _, m := range msgs {
			sm, ok := sqssched.DecodeSweep(aws.ToString(m.Body))
			if !ok {
				t.Fatalf("not a sweep message on the work queue: %s", aws.ToString(m.Body))
			}
			swept[sm.Sweep]++
		}
		failed, err := s.deliverErr(s.sweepQueueURL, msgs)
		if err != nil {
			t.Fatal(err)
		}
		if len(failed) > 0 {
			t.Fatalf("the sweeper failed sweep messages %v", failed)
		}
	}
	return rep.Enqueued, swept
}

// loseTimeoutMessages receives the timeout queue until the messages of
// every id in ids came due and deletes those unseen (lost messages, for
// the backstop to find), handing the others to the sweeper as usual.
func (s *suite) loseTimeoutMessages(t *testing.T, ids []string) {
	t.Helper()
	lost := map[string]bool{}
	deadline := time.Now().Add(s.short + 20*time.Second)
	for len(lost) < len(ids) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d timeout messages came due", len(lost), len(ids))
		}
		var others, mine []sqstypes.Message
		for _, m := range s.receive(t, time.Second) {
			if i := slices.IndexFunc(ids, func(id string) bool { return messageFor(m, id) }); i >= 0 {
				mine = append(mine, m)
				lost[ids[i]] = true
			} else {
				others = append(others, m)
			}
		}
		s.delete(t, mine)
		s.sweep(t, others)
	}
}

// The scheduled sweep fans out through the real bootstrap, as the stack
// wires it: the schedule's event enqueues one sweep message per project to
// the work queue, the sweeper consumes them as SQS batches, and every due
// spawn of every project is timed out, once, by the sweeper.
func TestTheScheduledSweepFansOutThroughTheWorkQueueAndTimesOutEveryProject(t *testing.T) {
	s := setup(t)
	type due struct {
		p   *project
		id  string
		req spawnRequest
	}
	var all []due
	var ids []string
	projects := make([]*project, 4)
	for i := range projects {
		p := s.newProject(t)
		projects[i] = p
		for range 2 {
			id := p.verifiedClaim(s.apiShort)
			req := p.assume(s.apiShort, id)
			all = append(all, due{p, id, req})
			ids = append(ids, req.RequestID)
		}
	}
	s.loseTimeoutMessages(t, ids)
	for _, d := range all {
		if sp := d.p.spawn(d.req.RequestID); sp.State != spawn.Pending {
			t.Fatalf("%s resolved without its message: %s", d.req.RequestID, sp.Outcome)
		}
	}

	enqueued, swept := s.scheduledSweep(t)
	for _, p := range projects {
		if swept[p.name] != 1 {
			t.Errorf("project %s got %d sweep messages, want 1 (enqueued %d for %d projects)", p.name, swept[p.name], enqueued, len(swept))
		}
	}
	if enqueued < len(projects) || enqueued != len(swept) {
		t.Errorf("enqueued %d sweep messages for %d projects swept (%d of them this test's)", enqueued, len(swept), len(projects))
	}
	versions := map[string]int64{}
	for _, d := range all {
		sp := d.p.spawn(d.req.RequestID)
		if sp.State == spawn.Pending || sp.Outcome != spawn.TimeoutRestored {
			t.Fatalf("%s of %s after the fan-out: %s %s", d.req.RequestID, d.p.name, sp.State, sp.Outcome)
		}
		to := d.p.events(d.id, ledger.EvSpawnTimeout)
		if len(to) != 1 || to[0].Author != "sweeper" {
			t.Fatalf("%s: %d spawn_timeout events (%+v), want one by the sweeper", d.id, len(to), to)
		}
		if resolved := sp.ResolvedAt; resolved == nil || resolved.Before(d.req.ExpiresAt) {
			t.Fatalf("%s timed out at %v, before its expiry %v", d.req.RequestID, resolved, d.req.ExpiresAt)
		}
		e := d.p.entity(d.id)
		if e.Status != ledger.Verified {
			t.Fatalf("%s: status %s, want verified restored", d.id, e.Status)
		}
		versions[d.id] = e.Version
	}
	// The next run finds nothing more to do in these projects.
	s.scheduledSweep(t)
	for _, d := range all {
		if to := d.p.events(d.id, ledger.EvSpawnTimeout); len(to) != 1 || d.p.entity(d.id).Version != versions[d.id] {
			t.Fatalf("the second run changed %s: %d timeouts, version %d (was %d)", d.id, len(to), d.p.entity(d.id).Version, versions[d.id])
		}
	}
}
