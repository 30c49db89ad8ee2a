package eventbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/dont-cli/dont/internal/tools"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"

	"github.com/dont-cli/dont/internal/eventbus"
	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

var (
	db      *standin.Table
	busURL  string
	busErr  error
	stopBus = func() {}
)

func TestMain(m *testing.M) {
	db = standin.OpenTable("dont-eventbus", dynamo.CreateTable)
	busURL, stopBus, busErr = standin.EventBridge()
	code := m.Run()
	stopBus()
	db.Close()
	os.Exit(code)
}

func needBus(t *testing.T) {
	t.Helper()
	if busErr == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and no EventBridge endpoint: %v", busErr)
	}
	t.Skipf("no EventBridge endpoint: %v", busErr)
}

type received struct {
	Source     string
	DetailType string
	Detail     string
	Resources  []string
}

// accepted reads what the stand-in accepted (LocalStack has no such
// endpoint: these tests then check only the API's answers).
func accepted(t *testing.T) []received {
	t.Helper()
	resp, err := http.Get(busURL + "/_standin/events")
	if err != nil || resp.StatusCode != 200 {
		t.Skip("the endpoint is not the stand-in: its accepted events cannot be read")
	}
	defer resp.Body.Close()
	var out []received
	json.NewDecoder(resp.Body).Decode(&out)
	return out
}

// Every announced event reaches the default bus: source dont, the event
// name as detail-type, the webhook JSON as detail, through the outbox.
func TestEventsArePutOnTheDefaultBusThroughTheOutbox(t *testing.T) {
	needBus(t)
	db.Require(t)
	project := "bus-" + standin.RandomName()
	st := dynamo.New(standin.EnvClient(db.Endpoint, nil), db.Name, project)
	st.SetEventBus(true)
	bus := eventbus.Publisher{Client: standin.EventBridgeClient(busURL), Project: project}
	svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Tokens: st, Author: "test", HooksConfig: service.HooksConfig{Store: st, Bus: bus}})
	ctx := context.Background()
	c, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "water boils at 100 C"})
	if err != nil {
		t.Fatal(err)
	}
	sp, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: c.ID, Mode: spawn.ModeHarness})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Hooks.Deliver(ctx, 10)
	if err != nil || res.Delivered != 1 {
		t.Fatalf("deliver: %+v %v", res, err)
	}
	var found bool
	for _, e := range accepted(t) {
		if e.Source == "dont" && e.DetailType == "spawn.requested" && strings.Contains(e.Detail, sp.Spawn.ID) && len(e.Resources) == 2 && e.Resources[0] == "dont:project/"+project {
			found = true
		}
	}
	if !found {
		t.Fatalf("no spawn.requested on the bus: %+v", accepted(t))
	}
	if res, _ := svc.Hooks.Deliver(ctx, 10); res.Attempted != 0 {
		t.Fatalf("delivered twice: %+v", res)
	}
}

// The stand-in is as strict as the service: these are the answers the
// real PutEvents gives.
func TestTheEventBridgeStandInIsAsStrictAsTheService(t *testing.T) {
	needBus(t)
	client := standin.EventBridgeClient(busURL)
	ctx := context.Background()
	entry := func(detail string) types.PutEventsRequestEntry {
		return types.PutEventsRequestEntry{Source: aws.String("dont"), DetailType: aws.String("spawn.timeout"), Detail: aws.String(detail)}
	}
	validation := func(what string, entries []types.PutEventsRequestEntry) {
		t.Helper()
		_, err := client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "ValidationException" {
			t.Errorf("%s: %v, want a ValidationException", what, err)
		}
	}
	eleven := make([]types.PutEventsRequestEntry, 11)
	for i := range eleven {
		eleven[i] = entry(`{"n":1}`)
	}
	validation("11 entries", eleven)
	big := entry(`{"x":"` + strings.Repeat("a", 130*1024) + `"}`)
	validation("over 256 KB", []types.PutEventsRequestEntry{big, big})

	out, err := client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{
		entry(`{"ok":true}`),
		{Source: aws.String("dont"), Detail: aws.String(`{}`)}, // no DetailType
		entry(`not json`),
		{Source: aws.String("dont"), DetailType: aws.String("x"), Detail: aws.String(`{}`), EventBusName: aws.String("nope")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	codes := []string{}
	for _, e := range out.Entries {
		codes = append(codes, aws.ToString(e.ErrorCode))
	}
	if out.FailedEntryCount != 3 || aws.ToString(out.Entries[0].EventId) == "" || strings.Join(codes, ",") != ",InvalidArgument,MalformedDetail,ResourceNotFoundException" {
		t.Fatalf("per-entry answers %d %v", out.FailedEntryCount, codes)
	}
}

// A refused entry is not retried; the attempt says why.
func TestAMalformedEntryFailsTheBusDelivery(t *testing.T) {
	needBus(t)
	p := eventbus.Publisher{Client: standin.EventBridgeClient(busURL), Bus: "not-a-bus"}
	r := p.Publish(context.Background(), hooks.Message{ID: "msg:x", Type: hooks.SpawnTimeout, At: time.Now(), Data: json.RawMessage(`{}`)})
	if r.Status != 0 || !r.Refused || r.Err == nil || !strings.Contains(r.Err.Error(), "ResourceNotFoundException") {
		t.Fatalf("publish to a missing bus: %+v", r)
	}
}
