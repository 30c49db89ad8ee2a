package dynamo

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dont-cli/dont/internal/service"
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

// The secret item (P#<p>#M / secret) holds every version of the project's
// callback secret: k<N> its bytes (sealed when k<N>_sealed is true) and
// current the version new tokens are made under. An item written before
// versions has only secret (version 1, as it is) and no current.
const (
	attrSecretLegacy  = "secret"
	attrSecretCurrent = "current"
)

func versionAttr(keyID string) string       { return "k" + keyID }
func versionSealedAttr(keyID string) string { return "k" + keyID + "_sealed" }

// ProjectSecret implements service.TokenStore: the current version.
func (s *Store) ProjectSecret(ctx context.Context) ([]byte, error) {
	_, secret, err := s.CurrentSecret(ctx)
	return secret, err
}

// CurrentSecret implements service.RotatingSecrets: the secret item read
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
	it, err := s.secretItem(ctx)
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

// SecretVersion implements service.RotatingSecrets: a cached version, or
// the item read again (a rotation elsewhere may have made it).
func (s *Store) SecretVersion(ctx context.Context, keyID string) ([]byte, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	if secret, ok := s.secrets[keyID]; ok {
		return secret, nil
	}
	it, err := s.secretItem(ctx)
	if err != nil {
		return nil, err
	}
	return s.openVersion(ctx, it, keyID)
}

// CreateProjectSecret implements service.TokenStore: version 1, 256 random
// bits (sealed), put only if the project has no secret (so racing
// creators agree), then read back. The operator action that creates a
// project's first token calls it; nothing a request sends does.
func (s *Store) CreateProjectSecret(ctx context.Context) ([]byte, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	it, err := s.secretItem(ctx)
	if err == nil {
		return s.openVersion(ctx, it, currentVersion(it))
	}
	if !errors.Is(err, service.ErrNotFound) {
		return nil, err
	}
	const first = service.FirstSecretVersion
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

// RotateSecret implements service.RotatingSecrets: a new version N+1 and
// current = N+1, conditioned on current still being N (a concurrent
// rotation loses with service.ErrConflict and nothing written).
func (s *Store) RotateSecret(ctx context.Context) (string, error) {
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
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
		UpdateExpression:    aws.String("SET #v = :v, #vs = :vs, #cur = :next"),
		ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: map[string]string{"#v": versionAttr(next), "#vs": versionSealedAttr(next),
			"#cur": attrSecretCurrent},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":v": values[versionAttr(next)], ":vs": values[versionSealedAttr(next)],
			":next": &types.AttributeValueMemberN{Value: next}},
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
		return "", service.ErrConflict
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
		return nil, service.ErrNotFound
	}
	return it, nil
}

// currentVersion is the item's current version ("1" for an item written
// before versions).
func currentVersion(it map[string]types.AttributeValue) string {
	if n, ok := it[attrSecretCurrent].(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return service.FirstSecretVersion
}

// openVersion is version keyID of the item, opened and cached; ErrNotFound
// if the item has no such version. secretMu is held.
func (s *Store) openVersion(ctx context.Context, it map[string]types.AttributeValue, keyID string) ([]byte, error) {
	if secret, ok := s.secrets[keyID]; ok {
		return secret, nil
	}
	stored := attrBytes(it, versionAttr(keyID))
	sealed, _ := it[versionSealedAttr(keyID)].(*types.AttributeValueMemberBOOL)
	if stored == nil && keyID == service.FirstSecretVersion {
		stored = attrBytes(it, attrSecretLegacy)
	}
	if len(stored) == 0 {
		return nil, service.ErrNotFound
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
