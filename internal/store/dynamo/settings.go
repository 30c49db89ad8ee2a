package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/store"
)

// Settings implements store.SettingsStore: item P#<p>#M / settings,
// read with the secret item (metaItem).
func (s *Store) Settings(ctx context.Context) (store.ProjectSettings, error) {
	var ps store.ProjectSettings
	it, err := s.metaItem(ctx, settingsSortKey)
	if err != nil || it == nil {
		return ps, err
	}
	if v := attrString(it, "spawn_timeout"); v != "" {
		if ps.SpawnTimeout, err = time.ParseDuration(v); err != nil {
			return ps, fmt.Errorf("dynamo: project %s: stored spawn_timeout %q: %w", s.project, v, err)
		}
	}
	if v := attrString(it, "spawn_max_lease"); v != "" {
		if ps.SpawnMaxLease, err = time.ParseDuration(v); err != nil {
			return ps, fmt.Errorf("dynamo: project %s: stored spawn_max_lease %q: %w", s.project, v, err)
		}
	}
	return ps, nil
}

// PutSettings implements store.SettingsStore.
func (s *Store) PutSettings(ctx context.Context, ps store.ProjectSettings) error {
	s.meta.drop()
	it := key(s.metaPK(), settingsSortKey)
	if ps.SpawnTimeout > 0 {
		it["spawn_timeout"] = str(ps.SpawnTimeout.String())
	}
	if ps.SpawnMaxLease > 0 {
		it["spawn_max_lease"] = str(ps.SpawnMaxLease.String())
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
	return s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	})
}

var _ store.SettingsStore = (*Store)(nil)
