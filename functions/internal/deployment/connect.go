package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/dont-cli/dont/internal/kms"
	sqssched "github.com/dont-cli/dont/internal/scheduler/sqs"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/webhook"
)

// Connect reads the configuration and builds the clients: once per cold
// start, before the first event. Region, credentials and endpoints are
// the SDK's defaults, so AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_DYNAMODB
// and AWS_ENDPOINT_URL_SQS) points the functions at LocalStack or at the
// local stand-ins. author is recorded on the events this function writes.
func Connect(ctx context.Context, getenv func(string) string, author string, log *slog.Logger) (*Deployment, error) {
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS configuration: %w", err)
	}
	ddb := dynamodb.NewFromConfig(awsCfg)
	queue := awssqs.NewFromConfig(awsCfg)
	var sealer dynamo.Sealer
	if cfg.SecretsKey != "" {
		// Opened once per version and process every SecretCacheTTL, not
		// once per project store (rebuilt every minute).
		sealer = NewSecretCache(kms.Sealer{Client: awskms.NewFromConfig(awsCfg), KeyID: cfg.SecretsKey}, SecretCacheTTL)
	}
	return &Deployment{
		Config:   cfg,
		Author:   author,
		Log:      log,
		DynamoDB: ddb,
		Sealer:   sealer,
		Open: func(project string) Store {
			st := dynamo.New(ddb, cfg.Table, project)
			st.SetFrameRetention(cfg.FrameRetention)
			st.SetDeliveryRetention(cfg.DeliveryRetention)
			if sealer != nil {
				st.SetSealer(sealer)
			}
			return st
		},
		Queue:       &sqssched.Queue{Client: queue, URL: cfg.QueueURL},
		Work:        workQueue(queue, cfg.SweepQueueURL),
		Registry:    &Registry{Client: ddb, Table: cfg.Table},
		Webhooks:    webhook.New(cfg.HookPolicy),
		EventBridge: eventbridge.NewFromConfig(awsCfg),
	}, nil
}

// workQueue is the sweep work queue, or nil when none is configured.
func workQueue(client *awssqs.Client, url string) *sqssched.Queue {
	if url == "" {
		return nil
	}
	return &sqssched.Queue{Client: client, URL: url}
}

// TableService is the service of the project st belongs to, for stores
// the API's backend opens: frames kept as configured, then NewService,
// with the project's own settings, which an operator sets
// (service.SetProjectSettings; see functions/api): its spawn timeout if it
// has one. A failed read of the settings keeps the deployment's default:
// it never fails a request.
func (d *Deployment) TableService(st *dynamo.Store) *service.Service {
	st.SetFrameRetention(d.Config.FrameRetention)
	st.SetDeliveryRetention(d.Config.DeliveryRetention)
	st.SetSecretClock(d.Now)
	svc := d.NewService(st.Project(), st)
	svc.Settings = st
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ps, err := st.Settings(ctx)
	switch {
	case err != nil:
		d.Log.Warn("project settings", "project", st.Project(), "err", err)
	default:
		if ps.SpawnTimeout > 0 {
			svc.SpawnTimeout = ps.SpawnTimeout
		}
		if ps.SpawnMaxLease > 0 {
			svc.SpawnMaxLease = ps.SpawnMaxLease
		}
	}
	return svc
}

// Backend is the backend of every project in the table, its stores
// sealing project secrets as configured.
func (d *Deployment) Backend() *Backend {
	b := NewBackend(d.DynamoDB, d.Config.Table, d.TableService)
	b.sealer = d.Sealer
	return b
}
