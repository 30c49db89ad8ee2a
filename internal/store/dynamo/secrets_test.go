package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/kms"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/standin"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

var kmsOnce struct {
	sync.Once
	sealer kms.Sealer
	stop   func() // the stand-in's, called by TestMain
	err    error
}

// sealer is a KMS sealer over the KMS stand-in (or DONT_KMS_ENDPOINT),
// with a key made for this test run.
func sealer(t *testing.T) kms.Sealer {
	t.Helper()
	kmsOnce.Do(func() {
		endpoint, stop, err := standin.KMS() // stopped by TestMain: the process would outlive the binary
		kmsOnce.stop = stop
		if err != nil {
			kmsOnce.err = err
			return
		}
		client := standin.KMSClient(endpoint)
		key, err := client.CreateKey(context.Background(), &awskms.CreateKeyInput{Description: aws.String("dont test")})
		if err != nil {
			kmsOnce.err = err
			return
		}
		kmsOnce.sealer = kms.Sealer{Client: client, KeyID: *key.KeyMetadata.Arn}
	})
	if kmsOnce.err != nil {
		t.Fatalf("KMS stand-in: %v", kmsOnce.err)
	}
	return kmsOnce.sealer
}

func secretItem(t *testing.T, project string) map[string]types.AttributeValue {
	t.Helper()
	out, err := newClient(nil, nil).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "P#" + project + "#M"},
			dynamo.SortKey: &types.AttributeValueMemberS{Value: "secret"}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// A reader of the table (or a restore, or an export) holds no usable
// callback secret: every version is KMS ciphertext bound to its project,
// and a rotation keeps the tokens already issued valid.
func TestProjectSecretsAreSealedByKMSAndRotate(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	sl := sealer(t)
	project := "sealed-" + randomName()
	st := dynamo.New(newClient(nil, nil), table, project)
	st.SetSealer(sl)

	first, err := st.CreateProjectSecret(ctx)
	if err != nil || len(first) != 32 {
		t.Fatalf("create: %v %x", err, first)
	}
	it := secretItem(t, project)
	stored, _ := it["k1"].(*types.AttributeValueMemberB)
	if stored == nil || bytes.Contains(stored.Value, first) || it["secret"] != nil {
		t.Fatalf("the stored version is not sealed: %v", it)
	}

	svc := service.New(service.Deps{Tokens: st, Project: project})
	before := auth.CallbackTokenKeyed(first, project, "1", "spawn:01BEFORE")
	keyID, err := st.RotateSecret(ctx)
	if err != nil || keyID != "2" {
		t.Fatalf("rotate: %q %v", keyID, err)
	}
	// A store that has never read the item (a cold function instance).
	cold := dynamo.New(newClient(nil, nil), table, project)
	cold.SetSealer(sl)
	kid, second, err := cold.CurrentSecret(ctx)
	if err != nil || kid != "2" || bytes.Equal(second, first) {
		t.Fatalf("current after rotation: %q %v (same as the first: %v)", kid, err, bytes.Equal(second, first))
	}
	coldSvc := service.New(service.Deps{Tokens: cold, Project: project})
	after := auth.CallbackTokenKeyed(second, project, "2", "spawn:01AFTER")
	for _, c := range []struct {
		svc   *service.Service
		token string
		rid   string
	}{{svc, before, "spawn:01BEFORE"}, {coldSvc, before, "spawn:01BEFORE"}, {coldSvc, after, "spawn:01AFTER"}, {svc, after, "spawn:01AFTER"}} {
		p, err := c.svc.Credentials.Authenticate(ctx, c.token)
		if err != nil || p.RequestID != c.rid {
			t.Errorf("token %s: %v %v", c.token, p, err)
		}
	}
	// A token made under one version and relabelled with another fails.
	forged := auth.CallbackTokenKeyed(first, project, "2", "spawn:01FORGED")
	if _, err := coldSvc.Credentials.Authenticate(ctx, forged); err == nil {
		t.Error("a token relabelled to another secret version authenticated")
	}
	if _, err := coldSvc.Credentials.Authenticate(ctx, auth.CallbackTokenKeyed(first, project, "9", "spawn:01NOSUCH")); err == nil {
		t.Error("a token naming a version that does not exist authenticated")
	}

	t.Run("a sealed version copied to another project does not open", func(t *testing.T) {
		other := "sealed-" + randomName()
		item := secretItem(t, project)
		item[dynamo.PartitionKey] = &types.AttributeValueMemberS{Value: "P#" + other + "#M"}
		if _, err := newClient(nil, nil).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
		thief := dynamo.New(newClient(nil, nil), table, other)
		thief.SetSealer(sl)
		if _, _, err := thief.CurrentSecret(ctx); err == nil {
			t.Fatal("another project's sealed secret opened")
		}
	})
	t.Run("a sealed secret without a sealer is an error, not a secret", func(t *testing.T) {
		if _, _, err := dynamo.New(newClient(nil, nil), table, project).CurrentSecret(ctx); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a concurrent rotation loses with a conflict and writes nothing", func(t *testing.T) {
		a := dynamo.New(newClient(nil, nil), table, project)
		a.SetSealer(sl)
		b := dynamo.New(newClient(nil, nil), table, project)
		b.SetSealer(sl)
		var wg sync.WaitGroup
		results := make([]error, 2)
		for i, s := range []*dynamo.Store{a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); _, results[i] = s.RotateSecret(ctx) }()
		}
		wg.Wait()
		won := 0
		for _, err := range results {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("rotation: %v", err)
			}
		}
		if won < 1 {
			t.Fatal("no rotation won")
		}
	})
}

// A project whose secret was written before versions (plaintext, no
// current) keeps working, and its first rotation writes a sealed version.
func TestALegacyPlaintextSecretStillVerifiesAndRotatesToASealedOne(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	project := "legacy-" + randomName()
	legacy := bytes.Repeat([]byte{7}, 32)
	if _, err := newClient(nil, nil).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "P#" + project + "#M"},
		dynamo.SortKey:      &types.AttributeValueMemberS{Value: "secret"},
		"secret":            &types.AttributeValueMemberB{Value: legacy},
	}}); err != nil {
		t.Fatal(err)
	}
	st := dynamo.New(newClient(nil, nil), table, project)
	st.SetSealer(sealer(t))
	svc := service.New(service.Deps{Tokens: st, Project: project})
	old := auth.CallbackTokenOf(legacy, project, "spawn:01OLD") // names no version
	if p, err := svc.Credentials.Authenticate(ctx, old); err != nil || p.RequestID != "spawn:01OLD" {
		t.Fatalf("legacy token: %v %v", p, err)
	}
	if kid, err := st.RotateSecret(ctx); err != nil || kid != "2" {
		t.Fatalf("rotate: %q %v", kid, err)
	}
	if sealed, _ := secretItem(t, project)["k2_sealed"].(*types.AttributeValueMemberBOOL); sealed == nil || !sealed.Value {
		t.Fatal("the rotated version is not sealed")
	}
	if _, err := svc.Credentials.Authenticate(ctx, old); err != nil {
		t.Fatalf("the legacy token after rotation: %v", err)
	}
}

// A rotation records when the outgoing version stopped being current, and
// a retired version is gone from the item: its tokens stop verifying on
// every store at once, including a warm one that had opened it, and a
// retirement racing a rotation, or naming the current version, removes
// nothing.
func TestARetiredSecretVersionIsRemovedAndItsTokensStopVerifying(t *testing.T) {
	needServer(t)
	ctx := context.Background()
	sl := sealer(t)
	project := "retire-" + randomName()
	st := dynamo.New(newClient(nil, nil), table, project)
	st.SetSealer(sl)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st.SetSecretClock(func() time.Time { return at })
	first, err := st.CreateProjectSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := auth.CallbackTokenKeyed(first, project, "1", "spawn:01OLD")
	if _, err := st.RotateSecret(ctx); err != nil {
		t.Fatal(err)
	}
	// A warm store (built after the rotation: a function instance keeps a
	// project's store a minute, and retiring waits at least that) that
	// opened version 1 for a token made before it.
	warm := dynamo.New(newClient(nil, nil), table, project)
	warm.SetSealer(sl)
	warmSvc := service.New(service.Deps{Tokens: warm, Project: project})
	if _, err := warmSvc.Credentials.Authenticate(ctx, old); err != nil {
		t.Fatal(err)
	}
	vs, err := st.SecretVersions(ctx)
	if err != nil || len(vs) != 2 || vs[0].KeyID != "1" || vs[0].Current || !vs[0].Until.Equal(at) ||
		vs[1].KeyID != "2" || !vs[1].Current || !vs[1].Until.IsZero() {
		t.Fatalf("versions after a rotation: %+v %v", vs, err)
	}
	// The old token verifies on the warm store again until retired.
	if _, err := warmSvc.Credentials.Authenticate(ctx, old); err != nil {
		t.Fatalf("before retiring: %v", err)
	}
	before := secretItem(t, project)
	for _, c := range []struct {
		name    string
		current string
		ids     []string
	}{{"a stale current (a rotation won meanwhile)", "1", []string{"1"}}, {"the current version itself", "2", []string{"2"}}} {
		if err := st.RetireSecretVersions(ctx, c.current, c.ids); !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: err = %v, want a conflict", c.name, err)
		}
	}
	if got := secretItem(t, project); len(got) != len(before) {
		t.Fatalf("a refused retirement changed the item: %d attributes, was %d", len(got), len(before))
	}
	if err := st.RetireSecretVersions(ctx, "2", []string{"1"}); err != nil {
		t.Fatal(err)
	}
	it := secretItem(t, project)
	for _, a := range []string{"k1", "k1_sealed", "k1_until"} {
		if it[a] != nil {
			t.Errorf("%s is still in the item after retiring version 1", a)
		}
	}
	if vs, _ := st.SecretVersions(ctx); len(vs) != 1 || vs[0].KeyID != "2" {
		t.Fatalf("versions after retiring: %+v", vs)
	}
	if _, err := warm.SecretVersion(ctx, "1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the warm store still opens the retired version: %v", err)
	}
	if _, err := warmSvc.Credentials.Authenticate(ctx, old); errs.As(err).Code != service.Unauthenticated {
		t.Fatalf("a token of the retired version on a warm store: %v", err)
	}
	_, second, err := st.CurrentSecret(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := warmSvc.Credentials.Authenticate(ctx, auth.CallbackTokenKeyed(second, project, "2", "spawn:01NEW")); err != nil {
		t.Fatalf("a token of the current version after retiring: %v", err)
	}
}
