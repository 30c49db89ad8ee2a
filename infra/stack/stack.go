// Package stack defines dont's AWS deployment as one CDK stack: the
// single DynamoDB table, the spawn-timeout queue and its dead-letter queue,
// the api and sweeper Lambda functions, the HTTP API in front of api, the
// EventBridge schedule that backs up the queue, and the alarms an operator
// needs.
//
// The stack is a function of its Props so that tests can synthesize it with
// dummy Lambda assets; infra/main.go only wires it into a CDK app.
package stack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
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

	// EnvTable and EnvTimeoutQueueURL are the environment variables both
	// functions read.
	EnvTable           = "DONT_TABLE"
	EnvTimeoutQueueURL = "DONT_TIMEOUT_QUEUE_URL"

	// Context keys that override where the Lambda assets are read from
	// (cdk synth -c dont:apiAssetDir=... or cdk.json "context").
	ContextAPIAssetDir     = "dont:apiAssetDir"
	ContextSweeperAssetDir = "dont:sweeperAssetDir"
	// ContextLambdaArch is "arm64" (the default) or "x86_64": LocalStack on
	// an x86_64 host runs x86_64 bootstraps without emulation.
	ContextLambdaArch = "dont:lambdaArch"
	// ContextAPIFront is "httpApi" (the default: API Gateway HTTP API) or
	// "functionUrl" (a Lambda function URL, which sends the same payload
	// 2.0 events; for LocalStack plans without API Gateway v2).
	ContextAPIFront = "dont:apiFront"

	// DefaultAPIAssetDir and DefaultSweeperAssetDir are the directories the
	// build writes each function's bootstrap binary to, relative to the
	// repository root (where cdk runs).
	DefaultAPIAssetDir     = "build/lambda/api"
	DefaultSweeperAssetDir = "build/lambda/sweeper"

	// DeadLetterMaxReceiveCount is how often a timeout message may fail
	// before it is parked in the dead-letter queue.
	DeadLetterMaxReceiveCount = 5
)

// TableActions are the only DynamoDB actions the functions may call, on the
// table and its indexes. TransactWriteItems is authorised through PutItem,
// UpdateItem, DeleteItem and ConditionCheckItem; TransactGetItems through
// GetItem. Scan is deliberately absent: sweeps query the sparse index.
var TableActions = []string{
	"dynamodb:BatchGetItem",
	"dynamodb:BatchWriteItem",
	"dynamodb:ConditionCheckItem",
	"dynamodb:DeleteItem",
	"dynamodb:DescribeTable",
	"dynamodb:GetItem",
	"dynamodb:PutItem",
	"dynamodb:Query",
	"dynamodb:UpdateItem",
}

// Props configures the stack. Zero values take the defaults above, after
// the CDK context keys.
type Props struct {
	awscdk.StackProps
	// APIAssetDir and SweeperAssetDir each hold a Linux arm64 executable
	// named bootstrap.
	APIAssetDir     string
	SweeperAssetDir string
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
	API          awslambda.Function
	Sweeper      awslambda.Function
	// HTTPAPI is nil when the API is fronted by a function URL.
	HTTPAPI awsapigatewayv2.HttpApi
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

	apiDir := setting(s.Stack, props.APIAssetDir, ContextAPIAssetDir, DefaultAPIAssetDir)
	sweeperDir := setting(s.Stack, props.SweeperAssetDir, ContextSweeperAssetDir, DefaultSweeperAssetDir)
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

	s.Table = awsdynamodb.NewTable(s.Stack, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(PartitionKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String(SortKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute: jsii.String(TTLAttribute),
		// The ledger is append-only and the product's record: keep it when
		// the stack is deleted.
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	s.Table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(PendingExpiryIndex),
		PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(PendingKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:        &awsdynamodb.Attribute{Name: jsii.String(ExpiresAtKey), Type: awsdynamodb.AttributeType_STRING},
		ProjectionType: awsdynamodb.ProjectionType_ALL,
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

	env := &map[string]*string{
		EnvTable:           s.Table.TableName(),
		EnvTimeoutQueueURL: s.TimeoutQueue.QueueUrl(),
	}
	s.API = function(s.Stack, "Api", apiDir, arch, 29, env)
	s.Sweeper = function(s.Stack, "Sweeper", sweeperDir, arch, sweeperTimeoutSeconds, env)

	tablePolicy := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings(TableActions...),
		Resources: &[]*string{
			s.Table.TableArn(),
			awscdk.Fn_Join(jsii.String(""), &[]*string{s.Table.TableArn(), jsii.String("/index/*")}),
		},
	})
	s.API.AddToRolePolicy(tablePolicy)
	s.Sweeper.AddToRolePolicy(tablePolicy)
	// Events go to the account's default bus, and nowhere else
	// (docs/hooks.md): the sweeper delivers them; the API function's
	// `hooks deliver` may too.
	busPolicy := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("events:PutEvents"),
		Resources: &[]*string{awscdk.Fn_Join(jsii.String(""), &[]*string{
			jsii.String("arn:"), awscdk.Aws_PARTITION(), jsii.String(":events:"), awscdk.Aws_REGION(), jsii.String(":"),
			awscdk.Aws_ACCOUNT_ID(), jsii.String(":event-bus/default"),
		})},
	})
	s.API.AddToRolePolicy(busPolicy)
	s.Sweeper.AddToRolePolicy(busPolicy)
	s.TimeoutQueue.GrantSendMessages(s.API)
	// The sweeper sends the messages of spawns and questions whose expiry
	// came within SQS's 15-minute delay limit (the scheduled sweep), and
	// re-enqueues the remainder of a message that arrives early; the event
	// source grants it the consume actions.
	s.TimeoutQueue.GrantSendMessages(s.Sweeper)
	s.Sweeper.AddEventSource(awslambdaeventsources.NewSqsEventSource(s.TimeoutQueue, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(10),
		ReportBatchItemFailures: jsii.Bool(true),
	}))

	// The rate is sqs.Sweeper.Period's default: each run sends the messages
	// of what came within 15 minutes of expiry since the previous one.
	awsevents.NewRule(s.Stack, jsii.String("SweepSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Backstop sweep of expired pending spawns and approvals (bounded GSI query)"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets: &[]awsevents.IRuleTarget{
			awseventstargets.NewLambdaFunction(s.Sweeper, &awseventstargets.LambdaFunctionProps{
				RetryAttempts: jsii.Number(2),
				MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(2)),
			}),
		},
	})

	var apiURL *string
	if front == "httpApi" {
		s.HTTPAPI = awsapigatewayv2.NewHttpApi(s.Stack, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
			Description: jsii.String("dont /v1 JSON API"),
			// The $default route sends every method and path to the api
			// function, which routes like `dont serve`.
			DefaultIntegration: awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("ApiIntegration"), s.API,
				&awsapigatewayv2integrations.HttpLambdaIntegrationProps{
					PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
				}),
		})
		apiURL = s.HTTPAPI.Url()
	} else {
		// Authentication is the API's own bearer tokens, as behind the
		// HTTP API.
		apiURL = s.API.AddFunctionUrl(&awslambda.FunctionUrlOptions{
			AuthType: awslambda.FunctionUrlAuthType_NONE,
		}).Url()
	}

	alarm(s.Stack, "DeadLettersVisibleAlarm", "Spawn-timeout messages reached the dead-letter queue",
		s.DeadLetters.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period:    awscdk.Duration_Minutes(jsii.Number(1)),
			Statistic: jsii.String("Maximum"),
		}))
	alarm(s.Stack, "ApiErrorsAlarm", "The api function returned errors",
		s.API.MetricErrors(&awscloudwatch.MetricOptions{
			Period:    awscdk.Duration_Minutes(jsii.Number(5)),
			Statistic: jsii.String("Sum"),
		}))
	alarm(s.Stack, "SweeperErrorsAlarm", "The sweeper function returned errors",
		s.Sweeper.MetricErrors(&awscloudwatch.MetricOptions{
			Period:    awscdk.Duration_Minutes(jsii.Number(5)),
			Statistic: jsii.String("Sum"),
		}))

	output(s.Stack, "ApiUrl", "Base URL of the API", apiURL)
	output(s.Stack, "TableName", "DynamoDB table ("+EnvTable+")", s.Table.TableName())
	output(s.Stack, "TimeoutQueueUrl", "Spawn-timeout queue ("+EnvTimeoutQueueURL+")", s.TimeoutQueue.QueueUrl())
	output(s.Stack, "DeadLetterQueueUrl", "Dead-letter queue of the spawn-timeout queue", s.DeadLetters.QueueUrl())
	output(s.Stack, "ApiFunctionName", "Name of the api function", s.API.FunctionName())
	output(s.Stack, "SweeperFunctionName", "Name of the sweeper function", s.Sweeper.FunctionName())
	return s
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

// function defines one Go Lambda function: a bootstrap binary on the
// provided.al2023 runtime, logging JSON to its own log group.
func function(stack awscdk.Stack, id, dir string, arch awslambda.Architecture, timeoutSeconds float64, env *map[string]*string) awslambda.Function {
	logs := awslogs.NewLogGroup(stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	return awslambda.NewFunction(stack, jsii.String(id+"Function"), &awslambda.FunctionProps{
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  arch,
		Handler:       jsii.String("bootstrap"),
		Code:          awslambda.Code_FromAsset(jsii.String(dir), nil),
		MemorySize:    jsii.Number(256),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(timeoutSeconds)),
		Environment:   env,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		LogGroup:      logs,
	})
}

// alarm raises when metric is above zero in one period; no data is fine.
func alarm(stack awscdk.Stack, id, description string, metric awscloudwatch.Metric) {
	metric.CreateAlarm(stack, jsii.String(id), &awscloudwatch.CreateAlarmOptions{
		AlarmDescription:   jsii.String(description),
		Threshold:          jsii.Number(0),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
}

func output(stack awscdk.Stack, id, description string, value *string) {
	awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{
		Description: jsii.String(description),
		Value:       value,
	})
}
