package dynamo

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dont-cli/dont/internal/store"
)

// Sealer seals a project's secret versions at rest and opens them again:
// on AWS, KMS under the stack's key with the project as encryption context
// (internal/kms), so that a reader of the table, a PITR restore or an
// export never holds a usable secret. It is declared here, where it is used.
type Sealer interface {
	Seal(ctx context.Context, project string, secret []byte) ([]byte, error)
	Open(ctx context.Context, project string, sealed []byte) ([]byte, error)
}

// SetSealer seals the secret versions this store writes from now on and
// opens the sealed ones it reads. Without one, versions are stored as they
// are (tests, and deployments made before sealing: their first version
// stays readable, and a rotation then writes a sealed one).
func (s *Store) SetSealer(sealer Sealer) { s.sealer = sealer }

// SetSecretClock is the clock a rotation stamps the outgoing version's
// end with (nil: the wall clock).
func (s *Store) SetSecretClock(now func() time.Time) { s.secretClock = now }

func (s *Store) secretNow() time.Time {
	if s.secretClock != nil {
		return s.secretClock()
	}
	return time.Now()
}

// The secret item (P#<p>#M / secret) holds every version of the project's
// callback secret still kept: k<N> its bytes (sealed when k<N>_sealed is
// true), k<N>_until when it stopped being current (written by the rotation
// that replaced it), and current the version new tokens are made under.
// An item written before versions has only secret (version 1, as it is)
// and no current. Retiring a version removes its three attributes.
const (
	attrSecretLegacy  = "secret"
	attrSecretCurrent = "current"
)

func versionAttr(keyID string) string       { return "k" + keyID }
func versionSealedAttr(keyID string) string { return "k" + keyID + "_sealed" }
func versionUntilAttr(keyID string) string  { return "k" + keyID + "_until" }

// ProjectSecret implements store.TokenStore: the current version.
func (s *Store) ProjectSecret(ctx context.Context) ([]byte, error) {
	_, secret, err := s.CurrentSecret(ctx)
	return secret, err
}

// CurrentSecret implements store.RotatingSecrets: the secret item read
// strongly consistently once, the current version opened and cached for
// the store's life (a function rebuilds a project's store every minute, so
// a rotation elsewhere reaches it within one; tokens made under the
// version before keep verifying meanwhile).
func (s *Store) CurrentSecret(ctx context.Context) (string, []byte, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	if secret, ok := s.secrets[s.current]; ok && s.current != "" {
		return s.current, secret, nil
	}
	it, err := s.secretItemToRead(ctx)
	if err != nil {
		return "", nil, err
	}
	keyID := currentVersion(it)
	secret, err := s.openVersion(ctx, it, keyID)
	if err == nil {
		s.current = keyID
	}
	return keyID, secret, err
}

// SecretVersion implements store.RotatingSecrets: the current version
// from the cache (kept for the store's life, a minute in a function, as
// CurrentSecret's); any other version only while the item still holds it,
// read again each time (strongly consistent, one read unit; the opened
// bytes stay cached, so KMS is asked once), so that a version an operator
// retired (RetireSecretVersions) is refused on every warm instance at
// once. (A rebuilt store's first such read may be the item its settings'
// read found a moment before, metaItem: once, within metaFresh.) Tokens of older versions are the few made before a rotation.
func (s *Store) SecretVersion(ctx context.Context, keyID string) ([]byte, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	if secret, ok := s.secrets[keyID]; ok && keyID == s.current {
		return secret, nil
	}
	it, err := s.secretItemToRead(ctx)
	if err != nil {
		return nil, err
	}
	s.current = currentVersion(it)
	if !hasVersion(it, keyID) {
		delete(s.secrets, keyID)
		return nil, store.ErrNotFound
	}
	return s.openVersion(ctx, it, keyID)
}

// hasVersion reports whether the item still holds version keyID.
func hasVersion(it map[string]types.AttributeValue, keyID string) bool {
	if attrBytes(it, versionAttr(keyID)) != nil {
		return true
	}
	return keyID == store.FirstSecretVersion && attrBytes(it, attrSecretLegacy) != nil
}

// CreateProjectSecret implements store.TokenStore: version 1, 256 random
// bits (sealed), put only if the project has no secret (so racing
// creators agree), then read back. The operator action that creates a
// project's first token calls it; nothing a request sends does.
func (s *Store) CreateProjectSecret(ctx context.Context) ([]byte, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	s.meta.drop()
	it, err := s.secretItem(ctx)
	if err == nil {
		return s.openVersion(ctx, it, currentVersion(it))
	}
	if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	const first = store.FirstSecretVersion
	put := key(s.metaPK(), "secret")
	put[attrSecretCurrent] = &types.AttributeValueMemberN{Value: first}
	if err := s.addVersion(ctx, put, first); err != nil {
		return nil, err
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: put,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": PartitionKey},
		ReturnConsumedCapacity:   types.ReturnConsumedCapacityIndexes}
	err = s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.PutItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return nil, err
	}
	// Whoever won the race made the secret: read it back.
	if it, err = s.secretItem(ctx); err != nil {
		return nil, err
	}
	s.current = currentVersion(it)
	return s.openVersion(ctx, it, s.current)
}

// RotateSecret implements store.RotatingSecrets: a new version N+1 and
// current = N+1, conditioned on current still being N (a concurrent
// rotation loses with store.ErrConflict and nothing written).
func (s *Store) RotateSecret(ctx context.Context) (string, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	s.meta.drop()
	it, err := s.secretItem(ctx)
	if err != nil {
		return "", err
	}
	was := currentVersion(it)
	n, err := strconv.Atoi(was)
	if err != nil {
		return "", fmt.Errorf("dynamo: the secret's current version %q is not a number", was)
	}
	next := strconv.Itoa(n + 1)
	values := map[string]types.AttributeValue{}
	if err := s.addVersion(ctx, values, next); err != nil {
		return "", err
	}
	cond := "#cur = :was"
	if _, has := it[attrSecretCurrent]; !has {
		cond = "attribute_not_exists(#cur)"
	} else {
		values[":was"] = &types.AttributeValueMemberN{Value: was}
	}
	in := &dynamodb.UpdateItemInput{TableName: aws.String(s.table), Key: key(s.metaPK(), "secret"),
		UpdateExpression:    aws.String("SET #v = :v, #vs = :vs, #cur = :next, #until = :until"),
		ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: map[string]string{"#v": versionAttr(next), "#vs": versionSealedAttr(next),
			"#cur": attrSecretCurrent, "#until": versionUntilAttr(was)},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":v": values[versionAttr(next)], ":vs": values[versionSealedAttr(next)],
			":next":  &types.AttributeValueMemberN{Value: next},
			":until": str(s.secretNow().UTC().Format(time.RFC3339Nano))},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
	if w, ok := values[":was"]; ok {
		in.ExpressionAttributeValues[":was"] = w
	}
	err = s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return "", store.ErrConflict
	}
	if err != nil {
		return "", err
	}
	s.current = next
	return next, nil
}

// addVersion puts version keyID (random, sealed when the store has a
// sealer) into item.
func (s *Store) addVersion(ctx context.Context, item map[string]types.AttributeValue, keyID string) error {
	fresh := make([]byte, 32)
	if _, err := crand.Read(fresh); err != nil {
		return err
	}
	stored, sealed := fresh, false
	if s.sealer != nil {
		var err error
		if stored, err = s.sealer.Seal(ctx, s.project, fresh); err != nil {
			return fmt.Errorf("dynamo: seal the project's secret: %w", err)
		}
		sealed = true
	}
	item[versionAttr(keyID)] = &types.AttributeValueMemberB{Value: stored}
	item[versionSealedAttr(keyID)] = &types.AttributeValueMemberBOOL{Value: sealed}
	return nil
}

// secretItem reads the secret item (strongly consistent); ErrNotFound, and
// nothing written, if the project has no secret. secretMu is held.
func (s *Store) secretItem(ctx context.Context) (map[string]types.AttributeValue, error) {
	it, err := s.getItem(ctx, key(s.metaPK(), "secret"))
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, store.ErrNotFound
	}
	return it, nil
}

// secretItemToRead is secretItem for the reads a request makes
// (CurrentSecret, SecretVersion): the item the settings' read kept, if
// fresh (metaItem). secretMu is held.
func (s *Store) secretItemToRead(ctx context.Context) (map[string]types.AttributeValue, error) {
	it, err := s.metaItem(ctx, secretSortKey)
	if err == nil && it == nil {
		err = store.ErrNotFound
	}
	return it, err
}

// currentVersion is the item's current version ("1" for an item written
// before versions).
func currentVersion(it map[string]types.AttributeValue) string {
	if n, ok := it[attrSecretCurrent].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return store.FirstSecretVersion
}

// openVersion is version keyID of the item, opened and cached; ErrNotFound
// if the item has no such version. secretMu is held.
func (s *Store) openVersion(ctx context.Context, it map[string]types.AttributeValue, keyID string) ([]byte, error) {
	if secret, ok := s.secrets[keyID]; ok {
		return secret, nil
	}
	stored := attrBytes(it, versionAttr(keyID))
	sealed, _ := it[versionSealedAttr(keyID)].(*types.AttributeValueMemberBOOL)
	if stored == nil && keyID == store.FirstSecretVersion {
		stored = attrBytes(it, attrSecretLegacy)
	}
	if len(stored) == 0 {
		return nil, store.ErrNotFound
	}
	secret := stored
	if sealed != nil && sealed.Value {
		if s.sealer == nil {
			return nil, errors.New("dynamo: the project's secret is sealed and this store has no sealer (set DONT_SECRETS_KEY)")
		}
		var err error
		if secret, err = s.sealer.Open(ctx, s.project, stored); err != nil {
			return nil, fmt.Errorf("dynamo: open the project's secret: %w", err)
		}
	}
	if s.secrets == nil {
		s.secrets = map[string][]byte{}
	}
	s.secrets[keyID] = secret
	return secret, nil
}

// SecretVersion is one kept version of a project's callback secret, as
// SecretVersions lists it: never its bytes.
type SecretVersion struct {
	KeyID   string
	Current bool
	// Until is when a rotation replaced it; zero for the current version
	// and for versions replaced before rotations recorded it.
	Until time.Time
}

// SecretVersions lists the versions the secret item keeps, oldest first
// (read strongly consistently); ErrNotFound if the project has no secret.
func (s *Store) SecretVersions(ctx context.Context) ([]SecretVersion, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	it, err := s.secretItem(ctx)
	if err != nil {
		return nil, err
	}
	current := currentVersion(it)
	seen := map[int]bool{}
	for name := range it {
		if name == attrSecretLegacy {
			seen[1] = true
			continue
		}
		if !strings.HasPrefix(name, "k") {
			continue
		}
		if n, err := strconv.Atoi(name[1:]); err == nil && n > 0 && strconv.Itoa(n) == name[1:] {
			seen[n] = true
		}
	}
	var out []SecretVersion
	for n := range seen {
		id := strconv.Itoa(n)
		v := SecretVersion{KeyID: id, Current: id == current}
		if u := attrString(it, versionUntilAttr(id)); u != "" {
			if v.Until, err = time.Parse(time.RFC3339Nano, u); err != nil {
				return nil, fmt.Errorf("dynamo: version %s's end %q is not a time", id, u)
			}
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(out[i].KeyID)
		b, _ := strconv.Atoi(out[j].KeyID)
		return a < b
	})
	return out, nil
}

// RetireSecretVersions removes versions keyIDs from the secret item, in
// one update conditioned on current still being current (which a
// rotation moves) and on none of keyIDs being it: store.ErrConflict and
// nothing removed otherwise. Tokens made under a removed version no longer
// verify (SecretVersion: ErrNotFound). Which versions may go is the
// caller's rule (functions/internal/deployment: RetireSecrets).
func (s *Store) RetireSecretVersions(ctx context.Context, current string, keyIDs []string) error {
	if len(keyIDs) == 0 {
		return nil
	}
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	s.meta.drop()
	names := map[string]string{"#cur": attrSecretCurrent}
	var remove []string
	for i, id := range keyIDs {
		if id == current {
			return store.ErrConflict
		}
		for j, attr := range []string{versionAttr(id), versionSealedAttr(id), versionUntilAttr(id)} {
			n := fmt.Sprintf("#r%d_%d", i, j)
			names[n] = attr
			remove = append(remove, n)
		}
		if id == store.FirstSecretVersion {
			names["#legacy"] = attrSecretLegacy
			remove = append(remove, "#legacy")
		}
	}
	in := &dynamodb.UpdateItemInput{TableName: aws.String(s.table), Key: key(s.metaPK(), "secret"),
		UpdateExpression:          aws.String("REMOVE " + strings.Join(remove, ", ")),
		ConditionExpression:       aws.String("#cur = :cur"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: map[string]types.AttributeValue{":cur": &types.AttributeValueMemberN{Value: current}},
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityIndexes}
	err := s.write(ctx, func(ctx context.Context) error {
		_, err := s.client.UpdateItem(ctx, in, noSDKRetries)
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return store.ErrConflict
	}
	if err != nil {
		return err
	}
	for _, id := range keyIDs {
		delete(s.secrets, id)
	}
	return nil
}
