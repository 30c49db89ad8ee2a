package slackapp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store"
)

// Sender delivers the hooks whose URL is slack-app:<channel> through the
// Slack Web API with the app's bot token: approval_asked posts the
// question (chat.postMessage) and records where; approval_ended updates
// that message in place (chat.update), whoever ended the question — a
// click in Slack, the CLI, the page, the sweeper. Every other hook goes
// to Next. A failed call is a failed attempt: the hook's retries apply.
type Sender struct {
	Next service.Sender
	// Client is the Web API client (slack.New(botToken); tests point it
	// at a fake Slack with slack.OptionAPIURL).
	Client *slack.Client
	// Messages keeps where each question was posted.
	Messages  store.SlackLinkStore
	PublicURL string
}

// NewClient is the Web API client of a bot token; apiURL "" is Slack's.
func NewClient(botToken, apiURL string, hc *http.Client) *slack.Client {
	opts := []slack.Option{}
	if apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(apiURL))
	}
	if hc != nil {
		opts = append(opts, slack.OptionHTTPClient(hc))
	}
	return slack.New(botToken, opts...)
}

// Send implements service.Sender.
func (s Sender) Send(ctx context.Context, url, secret, id string, at time.Time, body []byte) service.SendResult {
	channel, ok := hooks.SlackAppChannel(url)
	if !ok {
		if s.Next == nil {
			return service.SendResult{Err: errors.New("no webhook sender")}
		}
		return s.Next.Send(ctx, url, secret, id, at, body)
	}
	start := time.Now()
	res := func(err error) service.SendResult {
		if err != nil {
			return service.SendResult{Latency: time.Since(start), Err: err}
		}
		return service.SendResult{Status: http.StatusOK, Latency: time.Since(start)}
	}
	if s.Client == nil || s.Messages == nil {
		return res(errors.New("no Slack bot token is set (DONT_SLACK_BOT_TOKEN)"))
	}
	var p hooks.JSONPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return res(errors.New("a Slack app hook delivers json messages"))
	}
	if p.Type != hooks.ApprovalAsked && p.Type != hooks.ApprovalEnded {
		return res(nil) // only questions are posted
	}
	var d hooks.ApprovalData
	if err := json.Unmarshal(p.Data, &d); err != nil {
		return res(err)
	}
	a := d.Approval()
	posted, err := s.Messages.GetSlackMessage(ctx, channel, a.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		posted = store.SlackMessage{ApprovalID: a.ID, Channel: channel}
	case err != nil:
		return res(err)
	}
	if posted.TS == "" && !posted.PostStarted.IsZero() {
		// A post began and its answer never reached us: it may be in the
		// channel already.
		if posted.TS, err = s.findPosted(ctx, posted); err != nil {
			return res(err)
		}
		if posted.TS != "" {
			if err := s.Messages.PutSlackMessage(ctx, posted); err != nil {
				return res(err)
			}
		}
	}
	if p.Type == hooks.ApprovalAsked && posted.TS != "" {
		return res(nil) // posted already (a retry whose answer was lost)
	}
	text, blocks := Question(a, s.PublicURL)
	if p.Type == hooks.ApprovalEnded {
		text, blocks = Ending(a, s.PublicURL)
	}
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)}
	if posted.TS != "" {
		_, _, _, uerr := s.Client.UpdateMessageContext(ctx, posted.Channel, posted.TS, opts...)
		return res(uerr)
	}
	// Asked, or ended with no message to update (its post failed for
	// good): post it, kept under the hook's channel (a channel id, as
	// chat.update takes). The post is recorded as begun first, and the
	// message carries the question's id as metadata, so that a retry
	// finds a post whose answer was lost instead of posting it again.
	posted.PostStarted = time.Now().UTC()
	if err := s.Messages.PutSlackMessage(ctx, posted); err != nil {
		return res(err)
	}
	opts = append(opts, slack.MsgOptionMetadata(questionMetadata(a.ID)))
	_, ts, perr := s.Client.PostMessageContext(ctx, channel, opts...)
	if perr != nil {
		return res(perr)
	}
	posted.TS = ts
	return res(s.Messages.PutSlackMessage(ctx, posted))
}

// metadataType is the event_type of the metadata on every question
// message this app posts; its payload names the question.
const metadataType = "dont_question"

func questionMetadata(approvalID string) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: metadataType, EventPayload: map[string]any{"approval_id": approvalID}}
}

// Looking for a post whose answer was lost reads the channel's history
// from a minute before the post began (Slack's clock and ours may
// differ), at most historyPages pages of historyPageSize messages.
const (
	historySlack    = time.Minute
	historyPages    = 5
	historyPageSize = 200
)

// findPosted is the ts of the question message m's post put in its
// channel, or "" if there is none. Only a message of this app's own bot
// counts: another app or user could post the same metadata. A channel
// whose history the bot may not read (a Slack error such as
// missing_scope or not_in_channel) is treated as holding no such
// message: posting twice is better than never posting. Any other
// failure (the network, a rate limit) fails the attempt, which is
// retried.
func (s Sender) findPosted(ctx context.Context, m store.SlackMessage) (string, error) {
	var slackErr slack.SlackErrorResponse
	me, err := s.Client.AuthTestContext(ctx)
	if errors.As(err, &slackErr) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	params := &slack.GetConversationHistoryParameters{ChannelID: m.Channel, IncludeAllMetadata: true, Limit: historyPageSize,
		Oldest: strconv.FormatInt(m.PostStarted.Add(-historySlack).Unix(), 10) + ".000000"}
	for range historyPages {
		page, err := s.Client.GetConversationHistoryContext(ctx, params)
		if errors.As(err, &slackErr) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		for _, msg := range page.Messages {
			if msg.BotID == me.BotID && me.BotID != "" && msg.Metadata.EventType == metadataType &&
				msg.Metadata.EventPayload["approval_id"] == m.ApprovalID {
				return msg.Timestamp, nil
			}
		}
		if !page.HasMore || page.ResponseMetaData.NextCursor == "" {
			return "", nil
		}
		params.Cursor = page.ResponseMetaData.NextCursor
	}
	return "", nil
}
