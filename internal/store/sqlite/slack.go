package sqlite

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/dont-cli/dont/internal/store"
)

// slackSchema keeps Slack links and link codes, each a document under a
// key: "code/<hash>" or "link/<team>/<user>". Create applies it; a
// database made before it gets it on its first Slack write.
const slackSchema = `
CREATE TABLE IF NOT EXISTS slack_links(key TEXT PRIMARY KEY, doc BLOB NOT NULL);
`

var _ store.SlackLinkStore = (*Store)(nil)

func slackCodeKey(hash string) string       { return "code/" + hash }
func slackLinkKey(team, user string) string { return "link/" + team + "/" + user }

// PutSlackLinkCode implements store.SlackLinkStore.
func (s *Store) PutSlackLinkCode(ctx context.Context, c store.SlackLinkCode) error {
	doc, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, slackSchema); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO slack_links(key, doc) VALUES(?,?) ON CONFLICT(key) DO NOTHING", slackCodeKey(c.Hash), doc)
		return affectedOne(res, err, slackCodeKey(c.Hash))
	})
}

// TakeSlackLinkCode implements store.SlackLinkStore: one DELETE …
// RETURNING, so that of racing takers one gets the row.
func (s *Store) TakeSlackLinkCode(ctx context.Context, hash string) (store.SlackLinkCode, error) {
	var c store.SlackLinkCode
	err := s.write(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, slackSchema); err != nil {
			return err
		}
		var doc []byte
		if err := tx.QueryRowContext(ctx, "DELETE FROM slack_links WHERE key = ? RETURNING doc", slackCodeKey(hash)).Scan(&doc); err != nil {
			return classify(err)
		}
		return json.Unmarshal(doc, &c)
	})
	return c, err
}

// PutSlackLink implements store.SlackLinkStore.
func (s *Store) PutSlackLink(ctx context.Context, l store.SlackLink) error {
	doc, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, slackSchema); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO slack_links(key, doc) VALUES(?,?) ON CONFLICT(key) DO UPDATE SET doc = excluded.doc", slackLinkKey(l.Team, l.User), doc)
		return err
	})
}

func slackMessageKey(channel, approvalID string) string { return "msg/" + channel + "/" + approvalID }

// PutSlackMessage implements store.SlackLinkStore.
func (s *Store) PutSlackMessage(ctx context.Context, m store.SlackMessage) error {
	doc, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, slackSchema); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO slack_links(key, doc) VALUES(?,?) ON CONFLICT(key) DO UPDATE SET doc = excluded.doc", slackMessageKey(m.Channel, m.ApprovalID), doc)
		return err
	})
}

// GetSlackMessage implements store.SlackLinkStore.
func (s *Store) GetSlackMessage(ctx context.Context, channel, approvalID string) (store.SlackMessage, error) {
	var m store.SlackMessage
	return m, s.slackDoc(ctx, slackMessageKey(channel, approvalID), &m)
}

func (s *Store) slackDoc(ctx context.Context, key string, v any) error {
	var doc []byte
	err := s.queryRow(ctx, "SELECT doc FROM slack_links WHERE key = ?", key).Scan(&doc)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return store.ErrNotFound // nothing Slack was ever stored
	}
	if err != nil {
		return classify(err)
	}
	return json.Unmarshal(doc, v)
}

// GetSlackLink implements store.SlackLinkStore.
func (s *Store) GetSlackLink(ctx context.Context, team, user string) (store.SlackLink, error) {
	var l store.SlackLink
	return l, s.slackDoc(ctx, slackLinkKey(team, user), &l)
}
