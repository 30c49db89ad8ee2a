package dynamo

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store"
)

// Reindex backfills what the list indexes need on a project's items
// written before them (docs/aws.md, "Operator actions"): an entity item
// without its entity_status key es gets it; an entity whose latest spawn
// timed out, with nothing pending on it and no P#<p>#TO entry, gets that
// entry (to, toh, and its index keys); a term without its CURIE item gets
// one; a timed-out guess spawn outside P#<p>#TO is put in it; and a hook
// still under P#<p>#HOOK, where hooks were kept before they joined the
// meta partition, moves there (moveLegacyHooks).
//
// It pages through the project's entity partition, then its spawn
// partition, and stops between pages once opt.Stop says so, answering
// Done false and a Cursor to pass back. Every write is conditional: an
// entity's on the version it read (and, for a timeout entry, on nothing
// pending and no entry yet), so that a commit since — which writes the
// index keys itself — is never overwritten; a CURIE item's on its
// absence; a guess spawn's on its state and on having no index key. An
// item already indexed is not written, so a rerun fixes nothing more.
type ReindexOptions struct {
	// Cursor continues an earlier run ("": from the start).
	Cursor string
	// Stop is asked after each page whether to stop there (nil: never).
	Stop func() bool
	// PageSize is the items read per page (0: 100).
	PageSize int
}

// ReindexReport is what one Reindex run examined and fixed.
type ReindexReport struct {
	Project string `json:"project"`
	// Examined is how many items were read.
	Examined int `json:"examined"`
	// Fixed is how many writes landed: Statuses + Curies + TimedOut + Hooks.
	Fixed    int `json:"fixed"`
	Statuses int `json:"statuses"`
	// Hooks is how many hooks moved from P#<p>#HOOK, where hooks were
	// kept before, to the meta partition (hooks.go).
	Hooks    int `json:"hooks"`
	Curies   int `json:"curies"`
	TimedOut int `json:"timed_out"`
	// Raced is how many items changed between the read and the write: the
	// commit that changed them wrote their index keys.
	Raced  int    `json:"raced"`
	Done   bool   `json:"done"`
	Cursor string `json:"cursor,omitempty"`
}

// ErrBadCursor is Reindex's answer to a cursor it did not make for this
// project.
var ErrBadCursor = errors.New("dynamo: not a reindex cursor of this project")

// reindex phases: the entity partition, then the spawn partition.
const (
	phaseEntities = "E"
	phaseSpawns   = "S"
	cursorVersion = "r1"
)

func (s *Store) reindexCursor(phase, sk string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join([]string{cursorVersion, s.project, phase, sk}, "\x00")))
}

func (s *Store) parseReindexCursor(c string) (phase, sk string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", "", ErrBadCursor
	}
	parts := strings.SplitN(string(raw), "\x00", 4)
	if len(parts) != 4 || parts[0] != cursorVersion || parts[1] != s.project || (parts[2] != phaseEntities && parts[2] != phaseSpawns) {
		return "", "", ErrBadCursor
	}
	return parts[2], parts[3], nil
}

// Reindex implements the backfill described at ReindexOptions. A project
// with no entity and no settings or secret item is store.ErrNotFound; a
// cursor this project's Reindex did not make is ErrBadCursor. Nothing is
// written in either case.
func (s *Store) Reindex(ctx context.Context, opt ReindexOptions) (ReindexReport, error) {
	rep := ReindexReport{Project: s.project}
	phase, sk := phaseEntities, ""
	if opt.Cursor != "" {
		var err error
		if phase, sk, err = s.parseReindexCursor(opt.Cursor); err != nil {
			return rep, err
		}
	} else if known, err := s.known(ctx); err != nil {
		return rep, err
	} else if !known {
		return rep, store.ErrNotFound
	} else if err := s.moveLegacyHooks(ctx, &rep); err != nil {
		return rep, err
	}
	size := opt.PageSize
	if size <= 0 {
		size = 100
	}
	for {
		var pk string
		var fix func(context.Context, []map[string]types.AttributeValue, *ReindexReport) error
		switch phase {
		case phaseEntities:
			pk, fix = s.entityPK(), s.reindexEntities
		default:
			pk, fix = s.spawnPK(), s.reindexGuesses
		}
		q := s.partitionQuery(pk)
		q.Limit = aws.Int32(int32(size))
		if sk != "" {
			q.ExclusiveStartKey = key(pk, sk)
		}
		page, err := s.queryPage(ctx, q)
		if err != nil {
			return rep, err
		}
		rep.Examined += len(page.Items)
		if err := fix(ctx, page.Items, &rep); err != nil {
			return rep, err
		}
		rep.Fixed = rep.Statuses + rep.Curies + rep.TimedOut + rep.Hooks
		sk = attrString(page.LastEvaluatedKey, SortKey)
		if sk == "" {
			if phase == phaseSpawns {
				rep.Done = true
				return rep, nil
			}
			phase = phaseSpawns
		}
		if opt.Stop != nil && opt.Stop() {
			rep.Cursor = s.reindexCursor(phase, sk)
			return rep, nil
		}
	}
}

// known says whether the project has anything stored: an entity, or its
// settings or secret item.
func (s *Store) known(ctx context.Context) (bool, error) {
	for _, pk := range []string{s.entityPK(), s.metaPK()} {
		q := s.partitionQuery(pk)
		q.Limit = aws.Int32(1)
		page, err := s.queryPage(ctx, q)
		if err != nil {
			return false, err
		}
		if len(page.Items) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// reindexEntities fixes one page of entity items.
func (s *Store) reindexEntities(ctx context.Context, items []map[string]types.AttributeValue, rep *ReindexReport) error {
	type term struct{ id, curie string }
	var terms []term
	for _, it := range items {
		e, st, err := decodeEntity(it)
		if err != nil {
			return err
		}
		if e.Kind == ledger.KindTerm && e.Curie != "" {
			terms = append(terms, term{e.ID, e.Curie})
		}
		set := map[string]types.AttributeValue{}
		cond := []string{"#v = :v"}
		if want := listedStatus(e, st); want != "" && attrString(it, StatusKey) != want {
			set[StatusKey] = str(want)
		}
		if st.pending == "" && st.timedOut == "" && e.LastSpawn != "" {
			// Resolved inline: on the tail, bound for the tail's item.
			toh, sp := st.tailKey(e.Version), st.tailSpawn
			if sp == nil || sp.ID != e.LastSpawn {
				var err error
				if toh, sp, err = s.resolutionOf(ctx, e.ID, e.LastSpawn); err != nil {
					return err
				}
			}
			if sp != nil && sp.Outcome == spawn.TimeoutRestored {
				set["to"], set["toh"], set[PendingKey], set[ExpiresAtKey] = str(sp.ID), str(toh), str(s.timedOutPK()), str(timeText(sp.ExpiresAt))
				cond = append(cond, "attribute_not_exists(#ps)", "attribute_not_exists(#to)")
			}
		}
		if len(set) == 0 {
			continue
		}
		_, timedOut := set["to"]
		landed, err := s.update(ctx, key(s.entityPK(), e.ID), set, strings.Join(cond, " AND "),
			map[string]types.AttributeValue{":v": num(st.version)})
		if err != nil {
			return err
		}
		switch {
		case !landed:
			rep.Raced++
		default:
			if _, ok := set[StatusKey]; ok {
				rep.Statuses++
			}
			if timedOut {
				rep.TimedOut++
			}
		}
	}
	if len(terms) == 0 {
		return nil
	}
	keys := make([]map[string]types.AttributeValue, len(terms))
	for i, t := range terms {
		keys[i] = key(s.curiePK(), curieSortKey(t.curie))
	}
	have, err := s.batchGet(ctx, keys)
	if err != nil {
		return err
	}
	present := map[string]bool{}
	for _, it := range have {
		present[attrString(it, SortKey)] = true
	}
	for _, t := range terms {
		k := key(s.curiePK(), curieSortKey(t.curie))
		if present[curieSortKey(t.curie)] {
			continue
		}
		present[curieSortKey(t.curie)] = true // two terms of one CURIE: the first keeps it
		k["ent"] = str(t.id)
		err := s.write(ctx, func(ctx context.Context) error {
			_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: k,
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": PartitionKey}}, noSDKRetries)
			return err
		})
		var failed *types.ConditionalCheckFailedException
		switch {
		case errors.As(err, &failed):
			rep.Raced++ // a define put it meanwhile, or a retry of this put landed
		case err != nil:
			return err
		default:
			rep.Curies++
		}
	}
	return nil
}

// resolutionOf is the history item of entity's commit that resolved
// spawn id: its sort key and the spawn as it ended (nil: none).
func (s *Store) resolutionOf(ctx context.Context, entity, id string) (string, *spawn.Spawn, error) {
	q := s.partitionQuery(s.historyPK(entity))
	whereEqual(q, "sid", id)
	var sk string
	var out *spawn.Spawn
	err := s.query(ctx, q, func(it map[string]types.AttributeValue) error {
		_, sp, err := decodeHistory(it)
		if err == nil && sp != nil && sp.ID == id {
			sk, out = attrString(it, SortKey), sp
		}
		return err
	})
	return sk, out, err
}

// reindexGuesses puts one page's timed-out guess spawns without an index
// key in P#<p>#TO (spawnItem gives them that key since the index).
func (s *Store) reindexGuesses(ctx context.Context, items []map[string]types.AttributeValue, rep *ReindexReport) error {
	for _, it := range items {
		if attrString(it, "ent") != "" || attrString(it, PendingKey) != "" || attrString(it, "st") != string(spawn.Resolved) {
			continue
		}
		sp, err := decodeSpawn(it)
		if err != nil {
			return err
		}
		if sp.Outcome != spawn.TimeoutRestored {
			continue
		}
		landed, err := s.update(ctx, key(s.spawnPK(), sp.ID),
			map[string]types.AttributeValue{PendingKey: str(s.timedOutPK()), ExpiresAtKey: str(timeText(sp.ExpiresAt))},
			"#st = :st AND attribute_not_exists(#gk)", map[string]types.AttributeValue{":st": str(string(spawn.Resolved))})
		if err != nil {
			return err
		}
		if landed {
			rep.TimedOut++
		} else {
			rep.Raced++
		}
	}
	return nil
}

// update sets the attributes of set on the item at k if cond holds
// (attribute #name stands for name; values in values); false if it did not.
func (s *Store) update(ctx context.Context, k map[string]types.AttributeValue, set map[string]types.AttributeValue, cond string, values map[string]types.AttributeValue) (bool, error) {
	names := map[string]string{"#pk": PartitionKey, "#v": "v", "#ps": "ps", "#to": "to", "#st": "st", "#gk": PendingKey}
	vals := map[string]types.AttributeValue{}
	for n, v := range values {
		vals[n] = v
	}
	var sets []string
	i := 0
	for name, v := range set {
		i++
		n, p := fmt.Sprintf("#a%02d", i), fmt.Sprintf(":a%02d", i)
		names[n], vals[p] = name, v
		sets = append(sets, n+" = "+p)
	}
	used := map[string]string{}
	expr := "SET " + strings.Join(sets, ", ")
	cond = "attribute_exists(#pk) AND " + cond
	for n, name := range names {
		if strings.Contains(expr, n) || strings.Contains(cond, n) {
			used[n] = name
		}
	}
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table), Key: k,
			UpdateExpression: aws.String(expr), ConditionExpression: aws.String(cond),
			ExpressionAttributeNames: used, ExpressionAttributeValues: vals}, noSDKRetries)
		return err
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return false, nil
	}
	return err == nil, err
}

// moveLegacyHooks moves the project's hooks from P#<p>#HOOK, where they
// were kept before they joined the meta partition, each in one
// transaction: the put under its new key (on its absence) and the delete
// of the old item (on its presence). A hook that is already there, or
// already moved by a concurrent run, is not written again. Until it
// runs, commits do not hear a hook kept the old way.
func (s *Store) moveLegacyHooks(ctx context.Context, rep *ReindexReport) error {
	var old []map[string]types.AttributeValue
	if err := s.query(ctx, s.partitionQuery(s.legacyHookPK()), func(it map[string]types.AttributeValue) error {
		old = append(old, it)
		return nil
	}); err != nil {
		return err
	}
	rep.Examined += len(old)
	for _, it := range old {
		h, err := decodeHook(it)
		if err != nil {
			return err
		}
		moved, err := s.hookItem(h)
		if err != nil {
			return err
		}
		err = s.transact(ctx, putNew(s.table, moved), types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table),
			Key: key(s.legacyHookPK(), h.ID), ConditionExpression: aws.String("attribute_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": PartitionKey}}})
		if isCancelled(err) {
			rep.Raced++
			continue
		}
		if err != nil {
			return err
		}
		rep.Hooks++
	}
	if rep.Hooks > 0 {
		s.hookCache.drop()
	}
	return nil
}
