package deployment_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/hooks"
	sqssched "github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/webhook"
)

// On AWS a write that queues deliveries sends the project's delivery
// message; the sweeper function's handling of it posts the webhook and
// puts the event on the default bus. The scheduled sweep delivers what a
// lost message left.
func TestAWriteSendsADeliveryMessageAndTheSweeperDeliversWebhooksAndBusEvents(t *testing.T) {
	needServer(t)
	busURL, stop, err := standin.EventBridge()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(stop)
	got := make(chan string, 16)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var p struct{ Type string }
		json.Unmarshal(b, &p)
		got <- p.Type
	}))
	defer rcv.Close()
	loopback := hooks.AddrPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	q := &sentQueue{}
	project := "hooks-" + randomName()
	d := &deployment.Deployment{
		Config: deployment.Config{Table: table, QueueURL: "http://q", SpawnTimeout: 10 * time.Minute, EventBus: "default", HookPolicy: loopback},
		Author: "api", Log: slog.New(slog.DiscardHandler),
		Open:        func(p string) deployment.Store { return dynamo.New(newClient(nil, nil), table, p) },
		Queue:       &sqssched.Queue{Client: q, URL: "http://q"},
		Registry:    &deployment.Registry{Client: newClient(nil, nil), Table: table},
		Webhooks:    webhook.New(loopback),
		EventBridge: standin.EventBridgeClient(busURL),
	}
	svc := d.Service(project)
	ctx := context.Background()
	if _, err := svc.Hooks.Add(ctx, service.HookAddInput{URL: rcv.URL, Events: []string{"spawn.requested"}}); err != nil {
		t.Fatal(err)
	}
	spawnOn(t, svc)
	var deliver []sqssched.Message
	for _, body := range q.sent {
		if m, err := sqssched.Decode(body); err == nil && m.RequestID == sqssched.DeliverRequest && m.Project == project {
			deliver = append(deliver, m)
		}
	}
	if len(deliver) != 1 {
		t.Fatalf("delivery messages %v", q.sent)
	}
	out, err := d.Sweeper().Expire(ctx, deliver[0])
	if err != nil || out != sqssched.OutcomeDelivered {
		t.Fatalf("the delivery message: %s %v", out, err)
	}
	select {
	case typ := <-got:
		if typ != "spawn.requested" {
			t.Fatalf("received %s", typ)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the webhook was not delivered")
	}
	resp, err := http.Get(busURL + "/_standin/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"DetailType":"spawn.requested"`) || !strings.Contains(string(body), "dont:project/"+project) {
		t.Fatalf("the bus got %s", body)
	}

	// A lost delivery message: the scheduled sweep delivers.
	spawnOn(t, svc)
	d.Config.Projects = []string{project}
	rep, err := d.Sweeper().SweepAll(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var delivered int
	for _, ps := range rep.Projects {
		if ps.Project == project {
			delivered = ps.Delivered
		}
	}
	if delivered != 2 { // the webhook and the bus
		t.Fatalf("the scheduled sweep delivered %d: %+v", delivered, rep)
	}
	<-got
}

type sentQueue struct {
	mu   sync.Mutex
	sent []string
}

func (q *sentQueue) SendMessage(_ context.Context, in *awssqs.SendMessageInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, *in.MessageBody)
	return &awssqs.SendMessageOutput{}, nil
}

func spawnOn(t *testing.T, s *service.Service) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: res.ID}); err != nil {
		t.Fatal(err)
	}
}
