package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	sqssched "github.com/dont-cli/dont/internal/scheduler/sqs"
)

// handler decodes the two events the function receives and calls the
// sweeper; nothing else.
type handler struct {
	sweeper *sqssched.Sweeper
	limit   int
	log     *slog.Logger
}

// probe is just enough of an event to tell the two kinds apart.
type probe struct {
	Records []struct {
		EventSource string `json:"eventSource"`
	} `json:"Records"`
	Source     string `json:"source"`
	DetailType string `json:"detail-type"`
}

// invoke handles an SQS batch from either queue (timeout messages, or
// "sweep project p" messages of the work queue; answering
// batchItemFailures, so that only the failed records are delivered again)
// or a scheduled EventBridge event (answering the sweep report: with a
// work queue, how many sweep messages it enqueued).
func (h handler) invoke(ctx context.Context, raw json.RawMessage) (any, error) {
	var p probe
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("unreadable event: %w", err)
	}
	switch {
	case len(p.Records) > 0 && p.Records[0].EventSource == "aws:sqs":
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("unreadable SQS event: %w", err)
		}
		resp := h.sweeper.HandleSQS(ctx, ev)
		h.log.InfoContext(ctx, "sqs batch", "records", len(ev.Records), "failed", len(resp.BatchItemFailures))
		return resp, nil
	case p.Source == "aws.events" && p.DetailType == "Scheduled Event":
		rep, err := h.sweeper.SweepAll(ctx, h.limit)
		timedOut, questions, scheduled := 0, 0, 0
		for _, ps := range rep.Projects {
			timedOut += ps.TimedOut
			questions += ps.ApprovalsTimedOut
			scheduled += ps.Scheduled
		}
		h.log.InfoContext(ctx, "scheduled sweep", "projects", len(rep.Projects), "enqueued", rep.Enqueued, "waiting", rep.Waiting, "timed_out", timedOut,
			"approvals_timed_out", questions, "scheduled", scheduled, "failed", err != nil)
		return rep, err
	}
	return nil, fmt.Errorf("unknown event: neither SQS records nor a scheduled EventBridge event")
}
