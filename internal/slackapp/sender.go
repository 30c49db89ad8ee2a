package slackapp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
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
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return res(err)
	case p.Type == hooks.ApprovalAsked && err == nil:
		return res(nil) // posted already (a retry whose answer was lost)
	}
	text, blocks := Question(a, s.PublicURL)
	if p.Type == hooks.ApprovalEnded {
		text, blocks = Ending(a, s.PublicURL)
	}
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)}
	if err == nil {
		_, _, _, uerr := s.Client.UpdateMessageContext(ctx, posted.Channel, posted.TS, opts...)
		return res(uerr)
	}
	// Asked, or ended with no message to update (its post failed for
	// good): post it.
	// Kept under the hook's channel (a channel id, as chat.update takes).
	_, ts, perr := s.Client.PostMessageContext(ctx, channel, opts...)
	if perr != nil {
		return res(perr)
	}
	return res(s.Messages.PutSlackMessage(ctx, store.SlackMessage{ApprovalID: a.ID, Channel: channel, TS: ts}))
}
