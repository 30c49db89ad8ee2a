// Package stack defines dont's AWS deployment as one CDK stack: the
// single DynamoDB table, the spawn-timeout queue, the scheduled sweep's
// work queue (one message per project) and their dead-letter queues,
// the api and sweeper Lambda functions, the HTTP API in front of api, the
// EventBridge schedule that backs up the queue, and the alarms an operator
// needs.
//
// The stack is a function of its Props so that tests can synthesize it with
// dummy Lambda assets; infra/main.go only wires it into a CDK app.
package stack

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Names shared with the store, the functions and the tests. The DynamoDB
// adapter must use the same attribute and index names.
const (
	// PartitionKey and SortKey are the table's primary key attributes (strings).
	PartitionKey = "pk"
	SortKey      = "sk"
	// TTLAttribute holds an epoch-seconds expiry. Only frames carry it: TTL
	// garbage-collects old frames and never decides a spawn timeout.
	TTLAttribute = "ttl"
	// PendingExpiryIndex is the sparse GSI of pending spawns and approvals.
	// Items carry PendingKey only while pending, so a sweep reads only
	// what is pending and due.
	PendingExpiryIndex = "pending_expiry"
	// PendingKey is the GSI partition key (string).
	PendingKey = "gsi1pk"
	// ExpiresAtKey is the GSI sort key: a UTC RFC 3339 timestamp string.
	// Write it with a fixed number of fractional digits
	// ("2006-01-02T15:04:05.000000000Z"): plain RFC3339Nano drops trailing
	// zeros, and then string order is not time order.
	ExpiresAtKey = "expires_at"
	// EntityStatusIndex is the sparse GSI of entities by status
	// (`dont list --status`): partition PartitionKey, sort StatusKey,
	// which only entity items carry; it projects the keys only, and an
	// entry is written when an entity is created or changes status.
	EntityStatusIndex = "entity_status"
	// StatusKey is EntityStatusIndex's sort key (string).
	StatusKey = "es"

	// EnvTable and EnvTimeoutQueueURL are the environment variables both
	// functions read.
	EnvTable           = "DONT_TABLE"
	EnvTimeoutQueueURL = "DONT_TIMEOUT_QUEUE_URL"
	// EnvSecretsKey names the KMS key that seals project secrets.
	EnvSecretsKey = "DONT_SECRETS_KEY"
	// EnvEventBus names the bus events are put on, or "off".
	EnvEventBus = "DONT_EVENT_BUS"
	// EnvSweepQueueURL is the sweep work queue, the sweeper's alone: the
	// minute schedule's run enqueues one message per project there.
	EnvSweepQueueURL = "DONT_SWEEP_QUEUE_URL"
	// EnvAccessLog is "stage" on the api behind the HTTP API: the stage
	// writes the one access line per request, and the function's own
	// per-request line is DEBUG (functions/internal/deployment.CallLogger).
	EnvAccessLog = "DONT_ACCESS_LOG"

	// Context keys that override where the Lambda assets are read from
	// (cdk synth -c dont:apiAssetDir=... or cdk.json "context").
	ContextAPIAssetDir      = "dont:apiAssetDir"
	ContextSweeperAssetDir  = "dont:sweeperAssetDir"
	ContextOperatorAssetDir = "dont:operatorAssetDir"
	// ContextLambdaArch is "arm64" (the default) or "x86_64": LocalStack on
	// an x86_64 host runs x86_64 bootstraps without emulation.
	ContextLambdaArch = "dont:lambdaArch"
	// ContextAPIFront is "httpApi" (the default: API Gateway HTTP API) or
	// "functionUrl" (a Lambda function URL, which sends the same payload
	// 2.0 events; for LocalStack plans without API Gateway v2).
	ContextAPIFront = "dont:apiFront"

	// ContextEventBus names the EventBridge bus every announced event is
	// put on ("default": the account's default bus), or "off" (the
	// default: each event on the bus costs a write more per commit and a
	// PutEvents entry; docs/hooks.md).
	ContextEventBus = "dont:eventBus"
	// ContextAlarmEmail subscribes an email address to the alarm topic
	// (confirm the subscription from the message AWS sends). Without it the
	// topic exists and has no subscriber: subscribe a pager or a chat hook.
	ContextAlarmEmail = "dont:alarmEmail"
	// ContextTracing is "off" (the default) or "active" (X-Ray traces a
	// sample of invocations). Off by default: the functions carry no X-Ray
	// SDK and HTTP APIs send no trace header, so a trace shows one
	// segment per invocation, and at low volume the sampler's reservoir
	// traces nearly every invocation at $5 per million (docs/aws-cost.md).
	ContextTracing = "dont:tracing"
	// ContextLogLevel is the functions' application log level: DEBUG, INFO
	// (the default), WARN or ERROR. Lambda drops lines below it.
	ContextLogLevel = "dont:logLevel"
	// ContextAPIConcurrency and ContextSweeperConcurrency reserve concurrency
	// for each function; "0", the default, reserves none, so the stack
	// deploys on a new account, whose concurrency quota may be below any
	// reservation (Lambda keeps 100 unreserved). Without a reservation the
	// sweeper's SQS mappings' MaximumConcurrency bounds what a timeout
	// burst takes; with one, the api cannot take the sweeper's either.
	ContextAPIConcurrency     = "dont:apiConcurrency"
	ContextSweeperConcurrency = "dont:sweeperConcurrency"
	// ContextAPIMemory is the api function's memory size in MB (128 to
	// 10,240; default DefaultAPIMemoryMB). An api call is mostly waiting
	// for DynamoDB, billed by the millisecond at this size, so the
	// smallest is the cheapest per call; more memory buys CPU (one vCPU at
	// 1,769 MB), so less latency and more calls per instance (docs/aws.md,
	// "The memory size, by cost per operation").
	ContextAPIMemory = "dont:apiMemory"
	// ContextWarmWrites is the table's warm write throughput, in write
	// units a second (0: DynamoDB's default for a new on-demand table,
	// 4,000, which throttles at ≈ 330 lifecycles/s; docs/aws.md "The
	// table's first limit"). Raising it is a one-time charge; it never
	// goes down again.
	ContextWarmWrites = "dont:warmWrites"
	// ContextMaxWrites caps the table's and each index's on-demand write
	// units a second (0, the default: no cap but the account's quota): a
	// cost guard, beyond which DynamoDB throttles (TableThrottlesAlarm).
	ContextMaxWrites = "dont:maxWrites"
	// ContextThrottleRate and ContextThrottleBurst are the HTTP API stage's
	// request rate (per second) and burst limits.
	ContextThrottleRate  = "dont:throttleRate"
	ContextThrottleBurst = "dont:throttleBurst"
	// ContextPendingShards is how many partitions of the pending_expiry
	// index each project's pending spawns are spread over (1 to
	// MaxPendingShards, default DefaultPendingShards), set on every
	// function as EnvPendingShards. Raise it for a project that issues
	// more than ≈ 500 spawns a second; every sweep then reads that many
	// index partitions (docs/aws.md, "Limits and scale"). Lower it only
	// when no spawn is pending in the shards it drops.
	ContextPendingShards = "dont:pendingShards"
	EnvPendingShards     = "DONT_PENDING_SHARDS"
	// ContextPublicURL is where people open the approvals page (Slack's
	// "Open in dont" links), set as EnvPublicURL on every function.
	ContextPublicURL = "dont:publicUrl"
	EnvPublicURL     = "DONT_PUBLIC_URL"
	// ContextSlackSecret names (or is the ARN of) a Secrets Manager secret
	// holding the Slack app's secrets as JSON fields: SlackSigningSecretField
	// and SlackBotTokenField (docs/aws.md, "The Slack app"). They reach
	// the functions as CloudFormation dynamic references, resolved at
	// deploy time: the template holds the reference, never the value.
	// The signing secret and ContextSlackProject go to the api function,
	// which answers Slack's requests; the bot token to the api and the
	// sweeper, which deliver the slack-app hooks. Unset: no Slack app.
	ContextSlackSecret      = "dont:slackSecret"
	ContextSlackProject     = "dont:slackProject"
	SlackSigningSecretField = "signing_secret"
	SlackBotTokenField      = "bot_token"
	EnvSlackSigningSecret   = "DONT_SLACK_SIGNING_SECRET"
	EnvSlackProject         = "DONT_SLACK_PROJECT"
	EnvSlackBotToken        = "DONT_SLACK_BOT_TOKEN"
	DefaultPendingShards    = 1
	MaxPendingShards        = 64

	// Defaults of the settings above. The sweeper's SQS mappings run at most
	// SweeperQueueConcurrency batches of timeout messages and
	// SweepQueueConcurrency batches of sweep messages (ten projects each)
	// at once, together below a sweeper reservation so the schedule always
	// finds a slot.
	DefaultAPIConcurrency = 0
	// DefaultAPIMemoryMB is the api's size by cost per operation
	// (ContextAPIMemory); FunctionMemoryMB the sweeper's and the
	// operator's.
	DefaultAPIMemoryMB        = 128
	FunctionMemoryMB          = 256
	DefaultSweeperConcurrency = 0
	// DefaultWarmWrites covers the stage's default burst (2,000 requests a
	// second, 1,000 lifecycles of 12 write units, docs/aws-cost.md) so
	// that the stage, not a fresh table, is the deployment's first limit.
	DefaultWarmWrites = 12000
	// NewTableWarmWrites is what DynamoDB gives a new on-demand table.
	NewTableWarmWrites      = 4000
	SweeperQueueConcurrency = 10
	SweepQueueConcurrency   = 5
	DefaultThrottleRate     = 1000
	DefaultThrottleBurst    = 2000

	// DefaultAPIAssetDir and DefaultSweeperAssetDir are the directories the
	// build writes each function's bootstrap binary to, relative to the
	// repository root (where cdk runs).
	DefaultAPIAssetDir      = "build/lambda/api"
	DefaultSweeperAssetDir  = "build/lambda/sweeper"
	DefaultOperatorAssetDir = "build/lambda/operator"

	// DeadLetterMaxReceiveCount is how often a timeout message may fail
	// before it is parked in the dead-letter queue.
	DeadLetterMaxReceiveCount = 5

	// SweepQueueMaxAgeSeconds: a sweep message older than this is not
	// being consumed (the schedule sends them every minute).
	SweepQueueMaxAgeSeconds = 5 * 60
)

// TableActions are the only DynamoDB actions the functions call, on the
// table and its one index (internal/store/dynamo and
// functions/internal/deployment; the test TestTableActionsAreTheOnesTheCodeCalls
// greps them). TransactWriteItems is authorised through PutItem, UpdateItem
// and DeleteItem. Scan is deliberately absent: sweeps query the sparse index.
var TableActions = []string{
	"dynamodb:BatchGetItem",
	"dynamodb:DeleteItem",
	"dynamodb:GetItem",
	"dynamodb:PutItem",
	"dynamodb:Query",
	"dynamodb:UpdateItem",
}

// Props configures the stack. Zero values take the defaults above, after
// the CDK context keys.
type Props struct {
	awscdk.StackProps
	// APIAssetDir, SweeperAssetDir and OperatorAssetDir each hold a Linux
	// executable named bootstrap.
	APIAssetDir      string
	SweeperAssetDir  string
	OperatorAssetDir string
	// LambdaArch is "arm64" or "x86_64"; APIFront is "httpApi" or
	// "functionUrl". Empty means the context value, then the default.
	LambdaArch string
	APIFront   string
}

// Stack is the synthesized stack plus the constructs tests and callers
// may want to reach.
type Stack struct {
	awscdk.Stack
	Table        awsdynamodb.Table
	TimeoutQueue awssqs.Queue
	DeadLetters  awssqs.Queue
	// SweepQueue is the scheduled sweep's work queue: one message per
	// project each minute, consumed by the sweeper.
	SweepQueue       awssqs.Queue
	SweepDeadLetters awssqs.Queue
	API              awslambda.Function
	Sweeper          awslambda.Function
	// Operator makes a project's first token and sets its settings; only
	// an operator's direct invoke reaches it.
	Operator awslambda.Function
	// HTTPAPI is nil when the API is fronted by a function URL.
	HTTPAPI awsapigatewayv2.HttpApi
	// Alarms is the topic every alarm notifies, when raised and when it
	// clears.
	Alarms awssns.Topic
	// SecretsKey seals every project's callback secret in the table.
	SecretsKey awskms.Key
}

// New defines dont's stack in scope.
func New(scope constructs.Construct, id string, props *Props) *Stack {
	if props == nil {
		props = &Props{}
	}
	sp := props.StackProps
	if sp.Description == nil {
		sp.Description = jsii.String("dont: claim ledger and hand-off protocols (API, DynamoDB, spawn-timeout sweeper)")
	}
	s := &Stack{Stack: awscdk.NewStack(scope, jsii.String(id), &sp)}
	// Every resource carries the application's tag (cost allocation,
	// resource groups).
	awscdk.Tags_Of(s.Stack).Add(jsii.String("app"), jsii.String("dont"), nil)

	apiDir := setting(s.Stack, props.APIAssetDir, ContextAPIAssetDir, DefaultAPIAssetDir)
	sweeperDir := setting(s.Stack, props.SweeperAssetDir, ContextSweeperAssetDir, DefaultSweeperAssetDir)
	operatorDir := setting(s.Stack, props.OperatorAssetDir, ContextOperatorAssetDir, DefaultOperatorAssetDir)
	var arch awslambda.Architecture
	switch v := setting(s.Stack, props.LambdaArch, ContextLambdaArch, "arm64"); v {
	case "arm64":
		arch = awslambda.Architecture_ARM_64()
	case "x86_64":
		arch = awslambda.Architecture_X86_64()
	default:
		panic(fmt.Sprintf("%s must be arm64 or x86_64, not %q", ContextLambdaArch, v))
	}
	front := setting(s.Stack, props.APIFront, ContextAPIFront, "httpApi")
	if front != "httpApi" && front != "functionUrl" {
		panic(fmt.Sprintf("%s must be httpApi or functionUrl, not %q", ContextAPIFront, front))
	}

	warm, maxWrites := tableThroughput(s.Stack)
	s.Table = awsdynamodb.NewTable(s.Stack, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(PartitionKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String(SortKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute: jsii.String(TTLAttribute),
		// The ledger is append-only and the product's record: keep it when
		// the stack is deleted, and refuse a DeleteTable.
		RemovalPolicy:      awscdk.RemovalPolicy_RETAIN,
		DeletionProtection: jsii.Bool(true),
		WarmThroughput:     warm,
		// The cap, when set, is also each index's: an index's writes are
		// billed apart from the table's.
		MaxWriteRequestUnits: maxWrites,
	})
	s.Table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:            jsii.String(PendingExpiryIndex),
		PartitionKey:         &awsdynamodb.Attribute{Name: jsii.String(PendingKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:              &awsdynamodb.Attribute{Name: jsii.String(ExpiresAtKey), Type: awsdynamodb.AttributeType_STRING},
		ProjectionType:       awsdynamodb.ProjectionType_ALL,
		MaxWriteRequestUnits: maxWrites,
	})
	s.Table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:            jsii.String(EntityStatusIndex),
		PartitionKey:         &awsdynamodb.Attribute{Name: jsii.String(PartitionKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:              &awsdynamodb.Attribute{Name: jsii.String(StatusKey), Type: awsdynamodb.AttributeType_STRING},
		ProjectionType:       awsdynamodb.ProjectionType_KEYS_ONLY,
		MaxWriteRequestUnits: maxWrites,
	})

	s.DeadLetters = awssqs.NewQueue(s.Stack, jsii.String("TimeoutDeadLetters"), &awssqs.QueueProps{
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		EnforceSSL:      jsii.Bool(true),
	})
	const sweeperTimeoutSeconds = 60
	s.TimeoutQueue = awssqs.NewQueue(s.Stack, jsii.String("TimeoutQueue"), &awssqs.QueueProps{
		// Lambda's guidance: at least six times the consumer's timeout.
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(6 * sweeperTimeoutSeconds)),
		RetentionPeriod:   awscdk.Duration_Days(jsii.Number(4)),
		EnforceSSL:        jsii.Bool(true),
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           s.DeadLetters,
			MaxReceiveCount: jsii.Number(DeadLetterMaxReceiveCount),
		},
	})

	// Project secrets are sealed with this key (encryption context
	// dont:project); KMS rotates its material yearly, and an operator's
	// rotate_secret makes a new project secret version (docs/aws.md).
	s.SecretsKey = awskms.NewKey(s.Stack, jsii.String("SecretsKey"), &awskms.KeyProps{
		Description:       jsii.String("dont: seals each project's callback secret in the table"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	})

	s.SweepDeadLetters = awssqs.NewQueue(s.Stack, jsii.String("SweepDeadLetters"), &awssqs.QueueProps{
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		EnforceSSL:      jsii.Bool(true),
	})
	s.SweepQueue = awssqs.NewQueue(s.Stack, jsii.String("SweepQueue"), &awssqs.QueueProps{
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(6 * sweeperTimeoutSeconds)),
		// A sweep message is worth a minute: the next run sends another.
		RetentionPeriod: awscdk.Duration_Hours(jsii.Number(1)),
		EnforceSSL:      jsii.Bool(true),
		DeadLetterQueue: &awssqs.DeadLetterQueue{
			Queue:           s.SweepDeadLetters,
			MaxReceiveCount: jsii.Number(DeadLetterMaxReceiveCount),
		},
	})

	env := &map[string]*string{
		EnvTable:           s.Table.TableName(),
		EnvTimeoutQueueURL: s.TimeoutQueue.QueueUrl(),
		EnvSecretsKey:      s.SecretsKey.KeyArn(),
	}
	shards := number(s.Stack, ContextPendingShards, DefaultPendingShards)
	if shards < 1 || shards > MaxPendingShards {
		panic(fmt.Sprintf("%s must be from 1 to %d, not %d", ContextPendingShards, MaxPendingShards, shards))
	}
	(*env)[EnvPendingShards] = jsii.String(fmt.Sprint(shards))
	bus := setting(s.Stack, "", ContextEventBus, "off")
	(*env)[EnvEventBus] = jsii.String(bus)
	if url := setting(s.Stack, "", ContextPublicURL, ""); url != "" {
		(*env)[EnvPublicURL] = jsii.String(url)
	}
	sweeperEnv := &map[string]*string{EnvSweepQueueURL: s.SweepQueue.QueueUrl()}
	apiEnv := &map[string]*string{}
	for k, v := range *env {
		(*sweeperEnv)[k] = v
		(*apiEnv)[k] = v
	}
	slackApp(s.Stack, apiEnv, sweeperEnv)
	opts := functionOptions{
		memoryMB: FunctionMemoryMB,
		arch:     arch,
		tracing:  choice(s.Stack, ContextTracing, "off", "off", "active"),
		logLevel: choice(s.Stack, ContextLogLevel, "INFO", "DEBUG", "INFO", "WARN", "ERROR"),
		env:      env,
	}
	apiConcurrency := number(s.Stack, ContextAPIConcurrency, DefaultAPIConcurrency)
	sweeperConcurrency := number(s.Stack, ContextSweeperConcurrency, DefaultSweeperConcurrency)
	if sweeperConcurrency != 0 && sweeperConcurrency <= SweeperQueueConcurrency+SweepQueueConcurrency {
		panic(fmt.Sprintf("%s must be 0 or above %d (the queue mappings' maximum concurrency together), not %d",
			ContextSweeperConcurrency, SweeperQueueConcurrency+SweepQueueConcurrency, sweeperConcurrency))
	}
	apiOpts := opts
	apiOpts.env = apiEnv
	if apiOpts.memoryMB = number(s.Stack, ContextAPIMemory, DefaultAPIMemoryMB); apiOpts.memoryMB < 128 || apiOpts.memoryMB > 10240 {
		panic(fmt.Sprintf("%s must be from 128 to 10240 (MB), not %d", ContextAPIMemory, apiOpts.memoryMB))
	}
	s.API = function(s.Stack, "Api", apiDir, 29, apiConcurrency, false, apiOpts)
	sweeperOpts := opts
	sweeperOpts.env = sweeperEnv
	s.Sweeper = function(s.Stack, "Sweeper", sweeperDir, sweeperTimeoutSeconds, sweeperConcurrency, true, sweeperOpts)
	// Operator actions live apart from the public api function: a grant to
	// invoke the API is never a grant to mint any project's admin token.
	s.Operator = function(s.Stack, "Operator", operatorDir, 29, 0, false, opts)

	tablePolicy := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings(TableActions...),
		Resources: &[]*string{
			s.Table.TableArn(),
			awscdk.Fn_Join(jsii.String(""), &[]*string{s.Table.TableArn(), jsii.String("/index/" + PendingExpiryIndex)}),
			awscdk.Fn_Join(jsii.String(""), &[]*string{s.Table.TableArn(), jsii.String("/index/" + EntityStatusIndex)}),
		},
	})
	s.API.AddToRolePolicy(tablePolicy)
	s.Sweeper.AddToRolePolicy(tablePolicy)
	s.Operator.AddToRolePolicy(tablePolicy)
	// The api makes the secret of a project older than sealing at its
	// first spawn and opens them all; the operator makes and rotates them;
	// the sweeper issues no callback token and gets neither.
	// Only the two calls internal/kms makes (GrantEncryptDecrypt would add
	// ReEncrypt* and GenerateDataKey*).
	secretsPolicy := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("kms:Encrypt", "kms:Decrypt"),
		Resources: &[]*string{s.SecretsKey.KeyArn()},
	})
	s.API.AddToRolePolicy(secretsPolicy)
	s.Operator.AddToRolePolicy(secretsPolicy)
	// With a bus named, events go to it and nowhere else (docs/hooks.md):
	// the sweeper delivers them; the API function's `hooks deliver` may too.
	if bus != "off" {
		busPolicy := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("events:PutEvents"),
			Resources: &[]*string{awscdk.Fn_Join(jsii.String(""), &[]*string{
				jsii.String("arn:"), awscdk.Aws_PARTITION(), jsii.String(":events:"), awscdk.Aws_REGION(), jsii.String(":"),
				awscdk.Aws_ACCOUNT_ID(), jsii.String(":event-bus/" + bus),
			})},
		})
		s.API.AddToRolePolicy(busPolicy)
		s.Sweeper.AddToRolePolicy(busPolicy)
	}
	s.TimeoutQueue.GrantSendMessages(s.API)
	// The sweeper sends the messages of spawns and questions whose expiry
	// came within SQS's 15-minute delay limit (the scheduled sweep), and
	// re-enqueues the remainder of a message that arrives early; the event
	// source grants it the consume actions.
	s.TimeoutQueue.GrantSendMessages(s.Sweeper)
	s.Sweeper.AddEventSource(awslambdaeventsources.NewSqsEventSource(s.TimeoutQueue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(10),
		ReportBatchItemFailures: jsii.Bool(true),
		// A timeout burst scales the sweeper to this many concurrent
		// batches and no further (its reservation caps it as well).
		MaxConcurrency: jsii.Number(SweeperQueueConcurrency),
	}))
	// The scheduled run's fan-out: the sweeper sends one message per
	// project to the work queue (and a project's message again when its
	// sweep runs out of time), and consumes them, ten projects a batch,
	// at most SweepQueueConcurrency batches at once.
	s.SweepQueue.GrantSendMessages(s.Sweeper)
	s.Sweeper.AddEventSource(awslambdaeventsources.NewSqsEventSource(s.SweepQueue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(10),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(SweepQueueConcurrency),
	}))

	// The rate is sqs.Sweeper.Period's default: each run sends the messages
	// of what came within 15 minutes of expiry since the previous one.
	schedule := awsevents.NewRule(s.Stack, jsii.String("SweepSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Backstop sweep of expired pending spawns and approvals (bounded GSI query)"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{
			// EventBridge retries only a failed delivery to Lambda; the
			// function's own async retries are off (function()), so a
			// failing run is not repeated: the next minute's run is the retry.
			awseventstargets.NewLambdaFunction(s.Sweeper, &awseventstargets.LambdaFunctionProps{
				RetryAttempts: jsii.Number(2),
				MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(2)),
			}),
		},
	})

	s.Alarms = awssns.NewTopic(s.Stack, jsii.String("Alarms"), &awssns.TopicProps{
		DisplayName: jsii.String("dont alarms"),
		EnforceSSL:  jsii.Bool(true),
	})
	if email := setting(s.Stack, "", ContextAlarmEmail, ""); email != "" {
		s.Alarms.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(email), nil))
	}

	var apiURL *string
	if front == "httpApi" {
		s.HTTPAPI = awsapigatewayv2.NewHttpApi(s.Stack, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
			Description: jsii.String("dont /v1 JSON API"),
			// The $default stage is defined below, with throttling and
			// access logs.
			CreateDefaultStage: jsii.Bool(false),
			// The $default route sends every method and path to the api
			// function, which routes like `dont serve`.
			DefaultIntegration: awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("ApiIntegration"), s.API,
				&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
					PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
				}),
		})
		stage := s.HTTPAPI.AddStage(jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageOptions{
			StageName:  jsii.String("$default"),
			AutoDeploy: jsii.Bool(true),
			Throttle: &awsapigatewayv2.ThrottleSettings{
				RateLimit:  jsii.Number(float64(number(s.Stack, ContextThrottleRate, DefaultThrottleRate))),
				BurstLimit: jsii.Number(float64(number(s.Stack, ContextThrottleBurst, DefaultThrottleBurst))),
			},
		})
		accessLogs := awslogs.NewLogGroup(s.Stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
			Retention:     awslogs.RetentionDays_ONE_MONTH,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		})
		// One JSON line per request. Headers are not logged: a bearer
		// token never reaches the access log.
		stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
			DestinationArn: accessLogs.LogGroupArn(),
			Format:         jsii.String(AccessLogFormat),
		})
		// That line is the request's one log line: the function's own
		// per-request line drops to DEBUG.
		s.API.AddEnvironment(jsii.String(EnvAccessLog), jsii.String("stage"), nil)
		apiURL = stage.Url()
		cdknag.NagSuppressions_AddResourceSuppressions(s.HTTPAPI, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-APIG4"),
			Reason: jsii.String("every route is authorised by the api function itself: project bearer tokens with roles (docs/security.md)"),
		}}, jsii.Bool(true))
		alarm(s.Stack, s.Alarms, "Api5xxAlarm", "The HTTP API answered 5xx (including Lambda failures API Gateway turned into 502/503)",
			s.HTTPAPI.MetricServerError(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}), 0)
	} else {
		// Authentication is the API's own bearer tokens, as behind the
		// HTTP API. Throttling is the function's reserved concurrency
		// (dont:apiConcurrency), when one is set.
		apiURL = s.API.AddFunctionUrl(&awslambda.FunctionUrlOptions{
			AuthType: awslambda.FunctionUrlAuthType_NONE,
		}).Url()
		alarm(s.Stack, s.Alarms, "Api5xxAlarm", "The api function URL answered 5xx",
			s.API.Metric(jsii.String("Url5xxCount"), &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}), 0)
	}

	s.alarms(schedule, apiConcurrency, sweeperConcurrency, sweeperTimeoutSeconds)
	nagSuppressions(s)

	output(s.Stack, "ApiUrl", "Base URL of the API", apiURL)
	output(s.Stack, "TableName", "DynamoDB table ("+EnvTable+")", s.Table.TableName())
	output(s.Stack, "TimeoutQueueUrl", "Spawn-timeout queue ("+EnvTimeoutQueueURL+")", s.TimeoutQueue.QueueUrl())
	output(s.Stack, "DeadLetterQueueUrl", "Dead-letter queue of the spawn-timeout queue", s.DeadLetters.QueueUrl())
	output(s.Stack, "SweepQueueUrl", "The scheduled sweep's work queue ("+EnvSweepQueueURL+")", s.SweepQueue.QueueUrl())
	output(s.Stack, "ApiFunctionName", "Name of the api function", s.API.FunctionName())
	output(s.Stack, "SweeperFunctionName", "Name of the sweeper function", s.Sweeper.FunctionName())
	output(s.Stack, "OperatorFunctionName", "Name of the operator function (a project's first token, its settings)", s.Operator.FunctionName())
	output(s.Stack, "AlarmTopicArn", "SNS topic every alarm notifies", s.Alarms.TopicArn())
	return s
}

// tableThroughput is the table's warm throughput (nil: DynamoDB's
// default) and write cap (nil: none) from the context. A warm value at or
// below a new table's, or above the cap, is refused: the first buys
// nothing, the second buys capacity the cap then throttles.
func tableThroughput(stack awscdk.Stack) (*awsdynamodb.WarmThroughput, *float64) {
	maxWrites := number(stack, ContextMaxWrites, 0)
	// Unset, the warm value follows a cap below the default: warmed no
	// higher than the cap, and not at all when the cap is below a new
	// table's own.
	defaultWarm := DefaultWarmWrites
	if maxWrites != 0 && maxWrites < defaultWarm {
		defaultWarm = maxWrites
		if defaultWarm <= NewTableWarmWrites {
			defaultWarm = 0
		}
	}
	warmWrites := number(stack, ContextWarmWrites, defaultWarm)
	if warmWrites != 0 && warmWrites <= NewTableWarmWrites {
		panic(fmt.Sprintf("%s must be 0 or above %d (a new on-demand table's own), not %d", ContextWarmWrites, NewTableWarmWrites, warmWrites))
	}
	if maxWrites != 0 && warmWrites > maxWrites {
		panic(fmt.Sprintf("%s (%d) is above %s (%d): the cap would throttle what was warmed", ContextWarmWrites, warmWrites, ContextMaxWrites, maxWrites))
	}
	var warm *awsdynamodb.WarmThroughput
	if warmWrites > 0 {
		warm = &awsdynamodb.WarmThroughput{WriteUnitsPerSecond: jsii.Number(float64(warmWrites))}
	}
	var ceiling *float64
	if maxWrites > 0 {
		ceiling = jsii.Number(float64(maxWrites))
	}
	return warm, ceiling
}

// slackApp adds the Slack app's settings to the api's and the sweeper's
// environments when the context names its secret.
func slackApp(stack awscdk.Stack, apiEnv, sweeperEnv *map[string]*string) {
	secret := setting(stack, "", ContextSlackSecret, "")
	project := setting(stack, "", ContextSlackProject, "")
	switch {
	case secret == "" && project == "":
		return
	case secret == "" || project == "":
		panic(fmt.Sprintf("%s and %s are set together: the Slack app's secret and the one project it answers for", ContextSlackSecret, ContextSlackProject))
	}
	field := func(name string) *string {
		return awscdk.SecretValue_SecretsManager(jsii.String(secret), &awscdk.SecretsManagerSecretOptions{JsonField: jsii.String(name)}).UnsafeUnwrap()
	}
	(*apiEnv)[EnvSlackSigningSecret] = field(SlackSigningSecretField)
	(*apiEnv)[EnvSlackProject] = jsii.String(project)
	(*apiEnv)[EnvSlackBotToken] = field(SlackBotTokenField)
	(*sweeperEnv)[EnvSlackBotToken] = field(SlackBotTokenField)
}

// setting picks the explicit value, then the CDK context, then the default.
func setting(stack awscdk.Stack, explicit, contextKey, fallback string) string {
	if explicit != "" {
		return explicit
	}
	if v, ok := stack.Node().TryGetContext(jsii.String(contextKey)).(string); ok && v != "" {
		return v
	}
	return fallback
}

// choice is the context value of key, which must be one of allowed.
func choice(stack awscdk.Stack, key, fallback string, allowed ...string) string {
	v := setting(stack, "", key, fallback)
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	panic(fmt.Sprintf("%s must be one of %v, not %q", key, allowed, v))
}

// number is the context value of key as a non-negative integer (a context
// value given on the command line is a string; in cdk.json, a number).
func number(stack awscdk.Stack, key string, fallback int) int {
	switch v := stack.Node().TryGetContext(jsii.String(key)).(type) {
	case nil:
		return fallback
	case float64:
		if v >= 0 && v == float64(int(v)) {
			return int(v)
		}
	case string:
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err == nil && n >= 0 && fmt.Sprint(n) == v {
			return n
		}
	}
	panic(fmt.Sprintf("%s must be a non-negative integer, not %v", key, stack.Node().TryGetContext(jsii.String(key))))
}

// AccessLogFormat is the HTTP API's access log line, the one log line of
// a request: JSON, no headers (a bearer token never reaches the log); the
// time is the log event's own. Short keys: CloudWatch Logs bills every
// byte ingested (docs/aws.md, "Cost per million lifecycles, logs
// included").
const AccessLogFormat = `{"id":"$context.requestId","ip":"$context.identity.sourceIp",` +
	`"method":"$context.httpMethod","path":"$context.path","status":"$context.status",` +
	`"ms":"$context.responseLatency","err":"$context.integrationErrorMessage"}`

// functionOptions are the settings every function shares.
type functionOptions struct {
	memoryMB int
	arch     awslambda.Architecture
	tracing  string
	logLevel string
	env      *map[string]*string
}

// function defines one Go Lambda function: a bootstrap binary on the
// provided.al2023 runtime, logging JSON to its own log group, under a role
// of its own that may write only to that log group (no managed policy:
// AWSLambdaBasicExecutionRole grants logs on every group). reserved is its
// reserved concurrency, 0 for none. A function invoked asynchronously (the
// sweeper, by the schedule) is not retried by Lambda.
func function(stack awscdk.Stack, id, dir string, timeoutSeconds float64, reserved int, async bool, o functionOptions) awslambda.Function {
	logs := awslogs.NewLogGroup(stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("dont " + id + " function: its log group, the table, the timeout queue"),
	})
	role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	tracing := awslambda.Tracing_ACTIVE
	if o.tracing == "off" {
		tracing = awslambda.Tracing_DISABLED
	}
	props := &awslambda.FunctionProps{
		Runtime:               awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:          o.arch,
		Handler:               jsii.String("bootstrap"),
		Code:                  awslambda.Code_FromAsset(jsii.String(dir), nil),
		MemorySize:            jsii.Number(float64(o.memoryMB)),
		Timeout:               awscdk.Duration_Seconds(jsii.Number(timeoutSeconds)),
		Environment:           o.env,
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel(o.logLevel),
		SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
		LogGroup:              logs,
		Role:                  role,
		Tracing:               tracing,
	}
	if async {
		props.RetryAttempts = jsii.Number(0)
	}
	if reserved > 0 {
		props.ReservedConcurrentExecutions = jsii.Number(float64(reserved))
	}
	fn := awslambda.NewFunction(stack, jsii.String(id+"Function"), props)
	if o.tracing == "active" {
		// The X-Ray write actions take no resource.
		cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String("X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions"),
			AppliesTo: &[]interface{}{"Resource::*"},
		}}, jsii.Bool(true))
	} else {
		cdknag.NagSuppressions_AddResourceSuppressions(fn, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("Serverless-LambdaTracing"),
			Reason: jsii.String("tracing turned off by the operator (" + ContextTracing + "=off)"),
		}}, jsii.Bool(false))
	}
	return fn
}

// alarms defines what an operator is paged for: messages parked in the
// dead-letter queue, function errors, throttles and concurrency near the
// reservation, a sweeper run near its timeout, DynamoDB system errors and
// throttling, timeout messages waiting longer than their longest delay,
// and a schedule that stopped (or fails to) invoke the sweeper.
func (s *Stack) alarms(schedule awsevents.Rule, apiConcurrency, sweeperConcurrency int, sweeperTimeoutSeconds float64) {
	minutes := func(n float64) awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(n)) }
	sum := func(n float64) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: minutes(n), Statistic: jsii.String("Sum")}
	}
	maximum := func(n float64) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: minutes(n), Statistic: jsii.String("Maximum")}
	}
	alarm(s.Stack, s.Alarms, "DeadLettersVisibleAlarm", "Spawn-timeout messages reached the dead-letter queue",
		s.DeadLetters.MetricApproximateNumberOfMessagesVisible(maximum(1)), 0)
	// A timeout message is delayed at most 15 minutes; one older than 20
	// minutes is not being consumed.
	alarm(s.Stack, s.Alarms, "TimeoutQueueAgeAlarm", "Spawn-timeout messages wait longer than their longest delay (the sweeper is not consuming)",
		s.TimeoutQueue.MetricApproximateAgeOfOldestMessage(maximum(1)), 20*60)
	alarm(s.Stack, s.Alarms, "SweepDeadLettersVisibleAlarm", "Sweep messages reached the dead-letter queue (a project's sweep failed 5 times)",
		s.SweepDeadLetters.MetricApproximateNumberOfMessagesVisible(maximum(1)), 0)
	alarm(s.Stack, s.Alarms, "SweepQueueAgeAlarm", "Sweep messages wait longer than 5 minutes (the sweeper is not keeping up with the projects)",
		s.SweepQueue.MetricApproximateAgeOfOldestMessage(maximum(1)), SweepQueueMaxAgeSeconds)
	for name, fn := range map[string]awslambda.Function{"Api": s.API, "Sweeper": s.Sweeper, "Operator": s.Operator} {
		alarm(s.Stack, s.Alarms, name+"ErrorsAlarm", "The "+strings.ToLower(name)+" function returned errors", fn.MetricErrors(sum(5)), 0)
		alarm(s.Stack, s.Alarms, name+"ThrottlesAlarm", "The "+strings.ToLower(name)+" function was throttled", fn.MetricThrottles(sum(5)), 0)
	}
	for name, c := range map[string]struct {
		fn       awslambda.Function
		reserved int
	}{"Api": {s.API, apiConcurrency}, "Sweeper": {s.Sweeper, sweeperConcurrency}} {
		if c.reserved == 0 {
			continue
		}
		alarm(s.Stack, s.Alarms, name+"ConcurrencyAlarm", fmt.Sprintf("The %s function ran above 80%% of its reserved concurrency (%d)", strings.ToLower(name), c.reserved),
			c.fn.Metric(jsii.String("ConcurrentExecutions"), maximum(1)), float64(c.reserved)*0.8)
	}
	alarm(s.Stack, s.Alarms, "SweeperDurationAlarm", "A sweeper run took over 75% of its timeout",
		s.Sweeper.MetricDuration(maximum(5)), sweeperTimeoutSeconds*1000*0.75)
	alarm(s.Stack, s.Alarms, "TableSystemErrorsAlarm", "DynamoDB answered the functions with system errors",
		s.Table.MetricSystemErrorsForOperations(&awsdynamodb.SystemErrorsForOperationsMetricOptions{
			Period: minutes(5), Statistic: jsii.String("Sum"),
			// The operations the functions call (TableActions).
			Operations: &[]awsdynamodb.Operation{
				awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_BATCH_GET_ITEM, awsdynamodb.Operation_PUT_ITEM,
				awsdynamodb.Operation_UPDATE_ITEM, awsdynamodb.Operation_DELETE_ITEM, awsdynamodb.Operation_QUERY,
				awsdynamodb.Operation_TRANSACT_WRITE_ITEMS,
			},
		}), 0)
	alarm(s.Stack, s.Alarms, "TableThrottlesAlarm", "DynamoDB throttled reads or writes (a hot partition: docs/aws.md)",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String("FILL(r, 0) + FILL(w, 0)"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{
				"r": s.Table.Metric(jsii.String("ReadThrottleEvents"), sum(5)),
				"w": s.Table.Metric(jsii.String("WriteThrottleEvents"), sum(5)),
			},
			Period: minutes(5),
		}), 0)
	// The heartbeat of the schedule: no invocation in 5 minutes (missing
	// data counts) or a failed one.
	ruleMetric := func(name string) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:     jsii.String("AWS/Events"),
			MetricName:    jsii.String(name),
			DimensionsMap: &map[string]*string{"RuleName": schedule.RuleName()},
			Period:        minutes(5),
			Statistic:     jsii.String("Sum"),
		})
	}
	awscloudwatch.NewAlarm(s.Stack, jsii.String("ScheduleMissingAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String("The sweep schedule did not invoke the sweeper for 5 minutes"),
		Metric:             ruleMetric("Invocations"),
		Threshold:          jsii.Number(1),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_BREACHING,
	}).AddAlarmAction(awscloudwatchactions.NewSnsAction(s.Alarms))
	alarm(s.Stack, s.Alarms, "ScheduleFailedAlarm", "The sweep schedule failed to invoke the sweeper",
		ruleMetric("FailedInvocations"), 0)
}

// alarm raises when metric is above threshold in one period and notifies
// topic when it raises and when it clears; no data is fine.
func alarm(stack awscdk.Stack, topic awssns.Topic, id, description string, metric awscloudwatch.IMetric, threshold float64) {
	a := awscloudwatch.NewAlarm(stack, jsii.String(id), &awscloudwatch.AlarmProps{
		AlarmDescription:   jsii.String(description),
		Metric:             metric,
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	a.AddAlarmAction(awscloudwatchactions.NewSnsAction(topic))
	a.AddOkAction(awscloudwatchactions.NewSnsAction(topic))
}

// nagSuppressions records, next to the resources, why each remaining
// cdk-nag finding does not apply (infra/stack/nag_test.go fails on any
// finding without one).
func nagSuppressions(s *Stack) {
	suppress := func(construct constructs.IConstruct, id, reason string) {
		cdknag.NagSuppressions_AddResourceSuppressions(construct, &[]*cdknag.NagPackSuppression{{
			Id: jsii.String(id), Reason: jsii.String(reason),
		}}, jsii.Bool(true))
	}
	suppress(s.API, "Serverless-LambdaDLQ",
		"invoked synchronously (HTTP API or function URL) and by operators; a dead-letter target only receives failed asynchronous events")
	suppress(s.Operator, "Serverless-LambdaDLQ",
		"invoked synchronously by operators (aws lambda invoke), who read the answer")
	suppress(s.Sweeper, "Serverless-LambdaDLQ",
		"its asynchronous events are the minute schedule, which carries no data: the next run is the retry, and ScheduleFailedAlarm pages")
	suppress(s.Sweeper, "Serverless-LambdaAsyncFailureDestination",
		"its asynchronous events are the minute schedule, which carries no data: the next run is the retry, and ScheduleFailedAlarm pages")
	suppress(s.Sweeper, "Serverless-LambdaEventSourceMappingDestination",
		"SQS event sources park failed messages through the queue's redrive policy (TimeoutDeadLetters, maxReceiveCount 5, DeadLettersVisibleAlarm)")
	suppress(s.DeadLetters, "Serverless-SQSRedrivePolicy", "it is the dead-letter queue")
	suppress(s.SweepDeadLetters, "Serverless-SQSRedrivePolicy", "it is the sweep queue's dead-letter queue")
	suppress(s.Alarms, "AwsSolutions-SNS2",
		"CloudWatch alarms cannot publish to a topic encrypted with the AWS managed SNS key; alarm messages carry no secrets")
	suppress(s.Stack.Node().FindChild(jsii.String("SweepSchedule")), "Serverless-EventBusDLQ",
		"a missed schedule event carries no data; the next minute's run does its work and ScheduleMissingAlarm pages")
}

func output(stack awscdk.Stack, id, description string, value *string) {
	awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{
		Description: jsii.String(description),
		Value:       value,
	})
}
