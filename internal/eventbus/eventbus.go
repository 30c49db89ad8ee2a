// Package eventbus publishes dont's events to Amazon EventBridge (the
// default bus of the deployment's account and region): source "dont",
// detail-type the event's name (approval.asked, spawn.timeout, …), detail
// the same JSON a webhook receives, so that users route them with rules.
// It is the AWS sink of the webhook outbox (docs/hooks.md, docs/aws.md).
package eventbus

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/service"
)

// Source is the source of every event dont puts.
const Source = "dont"

// DefaultBus is the bus events go to.
const DefaultBus = "default"

// PutAPI is the part of the EventBridge client the publisher uses.
type PutAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Publisher puts events on one bus.
type Publisher struct {
	Client PutAPI
	Bus    string // DefaultBus if empty
	// Project is put in each event's resources, so rules can match it.
	Project string
}

// Entry is the PutEvents entry for m.
func (p Publisher) Entry(m hooks.Message) (types.PutEventsRequestEntry, error) {
	body, err := hooks.Body(hooks.FormatJSON, m, "")
	if err != nil {
		return types.PutEventsRequestEntry{}, err
	}
	bus := p.Bus
	if bus == "" {
		bus = DefaultBus
	}
	e := types.PutEventsRequestEntry{Source: aws.String(Source), DetailType: aws.String(string(m.Type)),
		Detail: aws.String(string(body)), EventBusName: aws.String(bus), Time: aws.Time(m.At)}
	if p.Project != "" {
		e.Resources = []string{"dont:project/" + p.Project, "dont:message/" + m.ID}
	}
	return e, nil
}

// Publish puts one message: the webhook outbox's attempt at the bus
// delivery (a status of 200 when the entry was accepted).
func (p Publisher) Publish(ctx context.Context, m hooks.Message) service.SendResult {
	start := time.Now()
	e, err := p.Entry(m)
	if err != nil {
		return service.SendResult{Err: err, Refused: true}
	}
	ctx, cancel := context.WithTimeout(ctx, hooks.AttemptTimeout)
	defer cancel()
	out, err := p.Client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{e}})
	r := service.SendResult{Latency: time.Since(start)}
	switch {
	case err != nil:
		r.Err = err
	case out.FailedEntryCount > 0 && len(out.Entries) > 0:
		fe := out.Entries[0]
		r.Err = fmt.Errorf("eventbridge: %s: %s", aws.ToString(fe.ErrorCode), aws.ToString(fe.ErrorMessage))
		// An internal failure may pass on a retry; a malformed entry never does.
		if code := aws.ToString(fe.ErrorCode); code != "InternalFailure" && code != "ThrottlingException" {
			r.Refused = true
		}
	default:
		r.Status = 200
	}
	return r
}
