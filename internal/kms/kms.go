// Package kms seals a project's callback secrets with AWS KMS: each
// version is encrypted under the deployment's key (Encrypt, a 32-byte
// plaintext) with the project as encryption context, so a ciphertext
// copied to another project's item does not open, and decrypted once per
// warm function instance (the store caches it). It is the adapter of the
// DynamoDB store's Sealer port.
package kms

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// ContextKey is the encryption-context key that binds a ciphertext to its
// project; key policies can condition on kms:EncryptionContext:dont:project.
const ContextKey = "dont:project"

// Sealer encrypts and decrypts under one KMS key.
type Sealer struct {
	Client *awskms.Client
	// KeyID is the key's id, ARN or alias (DONT_SECRETS_KEY).
	KeyID string
}

// Seal encrypts secret for project.
func (s Sealer) Seal(ctx context.Context, project string, secret []byte) ([]byte, error) {
	out, err := s.Client.Encrypt(ctx, &awskms.EncryptInput{
		KeyId:               aws.String(s.KeyID),
		Plaintext:           secret,
		EncryptionContext:   map[string]string{ContextKey: project},
		EncryptionAlgorithm: types.EncryptionAlgorithmSpecSymmetricDefault,
	})
	if err != nil {
		return nil, err
	}
	return out.CiphertextBlob, nil
}

// Open decrypts what Seal made for project. The key id is passed as well,
// so that a ciphertext of another key is refused rather than opened.
func (s Sealer) Open(ctx context.Context, project string, sealed []byte) ([]byte, error) {
	out, err := s.Client.Decrypt(ctx, &awskms.DecryptInput{
		KeyId:               aws.String(s.KeyID),
		CiphertextBlob:      sealed,
		EncryptionContext:   map[string]string{ContextKey: project},
		EncryptionAlgorithm: types.EncryptionAlgorithmSpecSymmetricDefault,
	})
	if err != nil {
		return nil, err
	}
	return out.Plaintext, nil
}
