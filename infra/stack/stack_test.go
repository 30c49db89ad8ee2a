package stack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/dont-cli/dont/infra/stack"
	"github.com/dont-cli/dont/internal/settings"
)

// synthesized holds one synthesis of the default stack shared by every
// test: synthesis runs the jsii kernel and takes seconds, and the stack is
// deterministic.
var synthesized struct {
	once     sync.Once
	template assertions.Template
	raw      map[string]any
	// nagFindings: cdk-nag's packs ride on the same synthesis (they only
	// annotate, the template is the same), so the default stack is built
	// once for both (TestCdkNagFindsNothingUnsuppressed).
	nagFindings []string
	err         error
}

// template synthesizes the default stack once.
func template(t *testing.T) (assertions.Template, map[string]any) {
	t.Helper()
	needNode(t)
	synthesized.once.Do(func() {
		synthesized.template, synthesized.raw, synthesized.nagFindings, synthesized.err = synthWith(t, nil, true)
	})
	if synthesized.err != nil {
		t.Fatalf("synthesize stack: %v", synthesized.err)
	}
	return synthesized.template, synthesized.raw
}

// synth synthesizes the stack with dummy Lambda assets in a temporary
// directory, chosen through the CDK context as cdk.json would, plus
// extra context.
//
// Under -short only the default stack is synthesized (template): each
// other variant is a jsii synthesis of a second or more of CPU, and the
// tests and subtests that need one skip. .ci/run's full-budget step of
// infra/stack runs them all without -short and fails on any skip.
func synth(t testing.TB, extra map[string]any) (tpl assertions.Template, raw map[string]any, err error) {
	t.Helper()
	needNode(t)
	if testing.Short() && len(extra) > 0 {
		t.Skip("a variant of the stack: synthesized only without -short (.ci/run's full-budget step of infra/stack)")
	}
	tpl, raw, _, err = synthWith(t, extra, false)
	return tpl, raw, err
}

// synthWith is synth, with cdk-nag's packs applied and their unsuppressed
// findings returned when withNag.
func synthWith(t testing.TB, extra map[string]any, withNag bool) (tpl assertions.Template, raw map[string]any, findings []string, err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("synthesis panicked: %v", r)
		}
	}()
	dir, err := os.MkdirTemp("", "dont-infra-test-")
	if err != nil {
		return nil, nil, nil, err
	}
	defer os.RemoveAll(dir)
	apiDir := filepath.Join(dir, "api")
	sweeperDir := filepath.Join(dir, "sweeper")
	operatorDir := filepath.Join(dir, "operator")
	for _, d := range []string{apiDir, sweeperDir, operatorDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, nil, err
		}
		if err := os.WriteFile(filepath.Join(d, "bootstrap"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			return nil, nil, nil, err
		}
	}
	context := map[string]any{
		stack.ContextAPIAssetDir:      apiDir,
		stack.ContextSweeperAssetDir:  sweeperDir,
		stack.ContextOperatorAssetDir: operatorDir,
	}
	for k, v := range extra {
		context[k] = v
	}
	app := awscdk.NewApp(&awscdk.AppProps{
		Outdir:  jsii.String(filepath.Join(dir, "cdk.out")),
		Context: &context,
	})
	s := stack.New(app, "DontTest", nil)
	if withNag {
		addNagPacks(app)
	}
	tpl = assertions.Template_FromStack(s.Stack, nil)
	if withNag {
		findings = nagFindings(s.Stack)
	}
	b, err := json.Marshal(tpl.ToJSON())
	if err != nil {
		return nil, nil, nil, err
	}
	return tpl, raw, findings, json.Unmarshal(b, &raw)
}

// needNode skips a test that synthesizes the stack on a machine with only
// Go: synthesis runs the jsii kernel, a Node.js program. In CI (CI=true),
// which installs Node, its absence fails the test instead.
func needNode(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no node on PATH: the stack's synthesis runs the jsii kernel on Node.js")
		}
		t.Skip("no node on PATH: the stack's synthesis runs the jsii kernel on Node.js (CI installs it)")
	}
}

// check runs one CDK assertion. A failed assertion panics inside jsii; this
// turns the panic into a test error so every failure is reported.
func check(t *testing.T, what string, assertion func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assertion()
}

func obj(m map[string]any) assertions.Matcher {
	return assertions.Match_ObjectLike(&m)
}

func arrayWith(items ...any) assertions.Matcher {
	return assertions.Match_ArrayWith(&items)
}

// resources returns the template's resources of one type, by logical id.
func resources(raw map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	all, _ := raw["Resources"].(map[string]any)
	for id, r := range all {
		res, _ := r.(map[string]any)
		if res["Type"] == typ {
			out[id] = res
		}
	}
	return out
}

func props(res map[string]any) map[string]any {
	p, _ := res["Properties"].(map[string]any)
	return p
}

func TestResourceCounts(t *testing.T) {
	tpl, _ := template(t)
	counts := map[string]float64{
		"AWS::DynamoDB::Table":            1,
		"AWS::SQS::Queue":                 4,
		"AWS::Lambda::Function":           3,
		"AWS::Lambda::EventSourceMapping": 2,
		"AWS::ApiGatewayV2::Api":          1,
		"AWS::ApiGatewayV2::Integration":  1,
		"AWS::ApiGatewayV2::Route":        1,
		"AWS::ApiGatewayV2::Stage":        1,
		"AWS::Events::Rule":               1,
		"AWS::CloudWatch::Alarm":          16, // 18 with both reservations (TestConcurrencyIsReservedOnlyWhenAsked)
		"AWS::Logs::LogGroup":             4,
		"AWS::IAM::Role":                  3,
		"AWS::SNS::Topic":                 1,
		"AWS::KMS::Key":                   1,
	}
	for typ, n := range counts {
		t.Run(typ, func(t *testing.T) {
			check(t, typ, func() { tpl.ResourceCountIs(jsii.String(typ), jsii.Number(n)) })
		})
	}
}

func TestTable(t *testing.T) {
	tpl, raw := template(t)
	t.Run("on-demand with pk and sk strings", func(t *testing.T) {
		check(t, "table", func() {
			tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), obj(map[string]any{
				"BillingMode": "PAY_PER_REQUEST",
				"KeySchema": []any{
					map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
					map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
				},
				"AttributeDefinitions": arrayWith(
					map[string]any{"AttributeName": "pk", "AttributeType": "S"},
					map[string]any{"AttributeName": "sk", "AttributeType": "S"},
				),
			}))
		})
	})
	t.Run("point-in-time recovery", func(t *testing.T) {
		check(t, "pitr", func() {
			tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), obj(map[string]any{
				"PointInTimeRecoverySpecification": obj(map[string]any{"PointInTimeRecoveryEnabled": true}),
			}))
		})
	})
	t.Run("TTL attribute ttl", func(t *testing.T) {
		check(t, "ttl", func() {
			tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), obj(map[string]any{
				"TimeToLiveSpecification": map[string]any{"AttributeName": "ttl", "Enabled": true},
			}))
		})
	})
	t.Run("sparse pending_expiry GSI on gsi1pk and expires_at, keys-only entity_status GSI on pk and es", func(t *testing.T) {
		check(t, "gsi", func() {
			tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), obj(map[string]any{
				"AttributeDefinitions": arrayWith(
					map[string]any{"AttributeName": "gsi1pk", "AttributeType": "S"},
					map[string]any{"AttributeName": "expires_at", "AttributeType": "S"},
				),
				"GlobalSecondaryIndexes": []any{map[string]any{
					"IndexName": "pending_expiry",
					"KeySchema": []any{
						map[string]any{"AttributeName": "gsi1pk", "KeyType": "HASH"},
						map[string]any{"AttributeName": "expires_at", "KeyType": "RANGE"},
					},
					"Projection": map[string]any{"ProjectionType": "ALL"},
				}, map[string]any{
					"IndexName": "entity_status",
					"KeySchema": []any{
						map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
						map[string]any{"AttributeName": "es", "KeyType": "RANGE"},
					},
					"Projection": map[string]any{"ProjectionType": "KEYS_ONLY"},
				}},
			}))
		})
	})
	t.Run("retained when the stack is deleted", func(t *testing.T) {
		for id, res := range resources(raw, "AWS::DynamoDB::Table") {
			if res["DeletionPolicy"] != "Retain" {
				t.Errorf("%s DeletionPolicy = %v, want Retain", id, res["DeletionPolicy"])
			}
		}
	})
}

func TestQueues(t *testing.T) {
	tpl, raw := template(t)
	t.Run("timeout queue redrives to the DLQ after 5 receives", func(t *testing.T) {
		check(t, "redrive", func() {
			tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), obj(map[string]any{
				"RedrivePolicy": obj(map[string]any{
					"maxReceiveCount":     5,
					"deadLetterTargetArn": assertions.Match_AnyValue(),
				}),
			}))
		})
	})
	t.Run("visibility timeout covers the sweeper's timeout six times", func(t *testing.T) {
		var visibility, sweeperTimeout float64
		for _, q := range resources(raw, "AWS::SQS::Queue") {
			if v, ok := props(q)["VisibilityTimeout"].(float64); ok {
				visibility = v
			}
		}
		for id, fn := range resources(raw, "AWS::Lambda::Function") {
			if strings.HasPrefix(id, "Sweeper") {
				sweeperTimeout, _ = props(fn)["Timeout"].(float64)
			}
		}
		if sweeperTimeout == 0 || visibility < 6*sweeperTimeout {
			t.Errorf("queue VisibilityTimeout = %v, sweeper Timeout = %v; want visibility >= 6x timeout", visibility, sweeperTimeout)
		}
	})
}

func TestFunctions(t *testing.T) {
	tpl, raw := template(t)
	fns := resources(raw, "AWS::Lambda::Function")
	for _, name := range []string{"Api", "Sweeper", "Operator"} {
		t.Run(name, func(t *testing.T) {
			var found map[string]any
			for id, fn := range fns {
				if strings.HasPrefix(id, name+"Function") {
					found = props(fn)
				}
			}
			if found == nil {
				t.Fatalf("no function with logical id prefix %sFunction in %v", name, keys(fns))
			}
			if found["Runtime"] != "provided.al2023" {
				t.Errorf("Runtime = %v, want provided.al2023", found["Runtime"])
			}
			if a, _ := found["Architectures"].([]any); len(a) != 1 || a[0] != "arm64" {
				t.Errorf("Architectures = %v, want [arm64]", found["Architectures"])
			}
			if found["Handler"] != "bootstrap" {
				t.Errorf("Handler = %v, want bootstrap", found["Handler"])
			}
			vars, _ := found["Environment"].(map[string]any)["Variables"].(map[string]any)
			for _, v := range []string{"DONT_TABLE", "DONT_TIMEOUT_QUEUE_URL", "DONT_SECRETS_KEY"} {
				if vars[v] == nil {
					t.Errorf("environment lacks %s: %v", v, vars)
				}
			}
			if lc, _ := found["LoggingConfig"].(map[string]any); lc["LogFormat"] != "JSON" {
				t.Errorf("LoggingConfig = %v, want LogFormat JSON", found["LoggingConfig"])
			}
			// The api at its size by cost per operation (docs/aws.md).
			want := float64(stack.FunctionMemoryMB)
			if name == "Api" {
				want = stack.DefaultAPIMemoryMB
			}
			if found["MemorySize"] != want {
				t.Errorf("MemorySize = %v, want %v", found["MemorySize"], want)
			}
		})
	}
	t.Run("code comes from assets", func(t *testing.T) {
		check(t, "asset code", func() {
			tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), obj(map[string]any{
				"Code": obj(map[string]any{"S3Key": assertions.Match_StringLikeRegexp(jsii.String(`\.zip$`))}),
			}))
		})
	})
}

// statement is one IAM policy statement, normalised.
type statement struct {
	policy    string
	actions   []string
	resources []string
}

func statements(raw map[string]any) []statement {
	var out []statement
	for id, p := range resources(raw, "AWS::IAM::Policy") {
		doc, _ := props(p)["PolicyDocument"].(map[string]any)
		stmts, _ := doc["Statement"].([]any)
		for _, s := range stmts {
			m, _ := s.(map[string]any)
			st := statement{policy: id, actions: strs(m["Action"])}
			switch r := m["Resource"].(type) {
			case []any:
				for _, x := range r {
					st.resources = append(st.resources, jsonString(x))
				}
			default:
				st.resources = append(st.resources, jsonString(r))
			}
			out = append(out, st)
		}
	}
	return out
}

func policiesOf(raw map[string]any, role string) []statement {
	var out []statement
	for id, p := range resources(raw, "AWS::IAM::Policy") {
		for _, r := range props(p)["Roles"].([]any) {
			if strings.Contains(jsonString(r), role) {
				for _, st := range statements(raw) {
					if st.policy == id {
						out = append(out, st)
					}
				}
			}
		}
	}
	return out
}

func actionsOf(stmts []statement) []string {
	var out []string
	for _, s := range stmts {
		out = append(out, s.actions...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestLeastPrivilege(t *testing.T) {
	_, raw := template(t)
	t.Run("no wildcard actions", func(t *testing.T) {
		for _, st := range statements(raw) {
			for _, a := range st.actions {
				if strings.Contains(a, "*") {
					t.Errorf("policy %s grants wildcard action %q", st.policy, a)
				}
			}
		}
	})
	t.Run("no role may put events unless a bus is named", func(t *testing.T) {
		for _, st := range statements(raw) {
			if slices.Contains(st.actions, "events:PutEvents") {
				t.Errorf("policy %s grants PutEvents with the bus off", st.policy)
			}
		}
	})
	t.Run("with dont:eventBus=default, PutEvents only on the default bus", func(t *testing.T) {
		_, raw, err := synth(t, map[string]any{stack.ContextEventBus: "default"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, st := range statements(raw) {
			if !slices.Contains(st.actions, "events:PutEvents") {
				continue
			}
			n++
			if len(st.actions) != 1 || len(st.resources) != 1 || !strings.Contains(st.resources[0], ":event-bus/default\"") {
				t.Errorf("policy %s grants %v on %v", st.policy, st.actions, st.resources)
			}
		}
		if n != 2 {
			t.Errorf("%d policies may put events, want the api's and the sweeper's", n)
		}
	})
	t.Run("DynamoDB actions only on the table and its indexes", func(t *testing.T) {
		for _, st := range statements(raw) {
			if !slices.ContainsFunc(st.actions, func(a string) bool { return strings.HasPrefix(a, "dynamodb:") }) {
				continue
			}
			for _, r := range st.resources {
				if !strings.Contains(r, "Table") {
					t.Errorf("policy %s grants DynamoDB on %s", st.policy, r)
				}
			}
			if slices.Contains(st.actions, "dynamodb:Scan") {
				t.Errorf("policy %s grants dynamodb:Scan; sweeps query the sparse index", st.policy)
			}
		}
	})
	want := map[string][]string{
		"ApiRole":      {"sqs:SendMessage", "kms:Encrypt", "kms:Decrypt"},
		"SweeperRole":  {"sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"},
		"OperatorRole": {"kms:Encrypt", "kms:Decrypt"},
	}
	for role, actions := range want {
		t.Run(role, func(t *testing.T) {
			stmts := policiesOf(raw, role)
			got := actionsOf(stmts)
			for _, a := range append(actions, stack.TableActions...) {
				if !slices.Contains(got, a) {
					t.Errorf("%s lacks %s; has %v", role, a, got)
				}
			}
			if role == "ApiRole" && slices.Contains(got, "sqs:ReceiveMessage") {
				t.Errorf("api role may consume the timeout queue: %v", got)
			}
			if role == "OperatorRole" && slices.ContainsFunc(got, func(a string) bool { return strings.HasPrefix(a, "sqs:") }) {
				t.Errorf("operator role may use the timeout queue: %v", got)
			}
			if role == "SweeperRole" && slices.ContainsFunc(got, func(a string) bool { return strings.HasPrefix(a, "kms:") }) {
				t.Errorf("the sweeper may use the secrets key: %v", got)
			}
			for _, st := range stmts {
				if slices.ContainsFunc(st.actions, func(a string) bool { return strings.HasPrefix(a, "dynamodb:") }) {
					for _, r := range st.resources {
						named := strings.Contains(r, "/index/"+stack.PendingExpiryIndex+`"`) || strings.Contains(r, "/index/"+stack.EntityStatusIndex+`"`)
						if strings.Contains(r, "/index/") && !named {
							t.Errorf("%s grants DynamoDB on an index other than %s and %s: %s", role, stack.PendingExpiryIndex, stack.EntityStatusIndex, r)
						}
					}
				}
				if slices.ContainsFunc(st.actions, func(a string) bool { return strings.HasPrefix(a, "logs:") }) {
					if len(st.resources) != 1 || !strings.Contains(st.resources[0], strings.TrimSuffix(role, "Role")+"Logs") {
						t.Errorf("%s may write logs beyond its own log group: %v", role, st.resources)
					}
				}
			}
		})
	}
	t.Run("no managed policies", func(t *testing.T) {
		for id, r := range resources(raw, "AWS::IAM::Role") {
			if arns := props(r)["ManagedPolicyArns"]; arns != nil {
				t.Errorf("%s attaches managed policies %v (AWSLambdaBasicExecutionRole grants logs on every group)", id, arns)
			}
		}
	})
}

func TestSweeperTriggers(t *testing.T) {
	tpl, raw := template(t)
	t.Run("SQS event source reports batch item failures", func(t *testing.T) {
		check(t, "event source mapping", func() {
			tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), obj(map[string]any{
				"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
				"EventSourceArn":        assertions.Match_AnyValue(),
				"FunctionName":          obj(map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^SweeperFunction"))}),
			}))
		})
	})
	t.Run("EventBridge rule every minute targets the sweeper", func(t *testing.T) {
		check(t, "schedule", func() {
			tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), obj(map[string]any{
				"ScheduleExpression": "rate(1 minute)",
				"State":              "ENABLED",
				"Targets": arrayWith(obj(map[string]any{
					"Arn": obj(map[string]any{"Fn::GetAtt": arrayWith(assertions.Match_StringLikeRegexp(jsii.String("^SweeperFunction")))}),
				})),
			}))
		})
		check(t, "events may invoke the sweeper", func() {
			tpl.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), obj(map[string]any{
				"Principal": "events.amazonaws.com",
				"Action":    "lambda:InvokeFunction",
			}))
		})
	})
	t.Run("only the sweeper has triggers", func(t *testing.T) {
		for id, m := range resources(raw, "AWS::Lambda::EventSourceMapping") {
			if !strings.Contains(jsonString(props(m)["FunctionName"]), "Sweeper") {
				t.Errorf("%s maps to %v", id, props(m)["FunctionName"])
			}
		}
	})
}

// The scheduled run's fan-out: a work queue of its own, with a DLQ and
// alarms, consumed by the sweeper alone, whose environment alone names it.
func TestTheScheduledSweepFansOutThroughTheSweepQueue(t *testing.T) {
	tpl, raw := template(t)
	for id, fn := range resources(raw, "AWS::Lambda::Function") {
		vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		has := vars[stack.EnvSweepQueueURL] != nil
		if sweeper := strings.HasPrefix(id, "SweeperFunction"); has != sweeper {
			t.Errorf("%s: %s set = %v, want it on the sweeper only", id, stack.EnvSweepQueueURL, has)
		}
	}
	check(t, "sweep queue redrives to its own DLQ", func() {
		tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), obj(map[string]any{
			"RedrivePolicy": obj(map[string]any{
				"maxReceiveCount":     stack.DeadLetterMaxReceiveCount,
				"deadLetterTargetArn": obj(map[string]any{"Fn::GetAtt": arrayWith(assertions.Match_StringLikeRegexp(jsii.String("^SweepDeadLetters")))}),
			}),
		}))
	})
	check(t, "the sweeper consumes the sweep queue", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), obj(map[string]any{
			"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
			"BatchSize":             10,
			"EventSourceArn":        obj(map[string]any{"Fn::GetAtt": arrayWith(assertions.Match_StringLikeRegexp(jsii.String("^SweepQueue")))}),
			"FunctionName":          obj(map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^SweeperFunction"))}),
			"ScalingConfig":         obj(map[string]any{"MaximumConcurrency": stack.SweepQueueConcurrency}),
		}))
	})
	for _, c := range []struct{ queue, metric string }{{"SweepDeadLetters", "ApproximateNumberOfMessagesVisible"}, {"SweepQueue", "ApproximateAgeOfOldestMessage"}} {
		check(t, c.queue+" alarm", func() {
			tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), obj(map[string]any{
				"Namespace": "AWS/SQS", "MetricName": c.metric,
				"Dimensions": arrayWith(obj(map[string]any{
					"Name":  "QueueName",
					"Value": obj(map[string]any{"Fn::GetAtt": arrayWith(assertions.Match_StringLikeRegexp(jsii.String("^" + c.queue + "[0-9A-F]")))}),
				})),
			}))
		})
	}
	for _, role := range []string{"ApiRole", "OperatorRole"} {
		for _, st := range policiesOf(raw, role) {
			for _, r := range st.resources {
				if strings.Contains(r, "SweepQueue") || strings.Contains(r, "SweepDeadLetters") {
					t.Errorf("%s has %v on %s: only the sweeper uses the sweep queue", role, st.actions, r)
				}
			}
		}
	}
}

func TestHTTPAPI(t *testing.T) {
	tpl, _ := template(t)
	check(t, "HTTP protocol", func() {
		tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Api"), obj(map[string]any{"ProtocolType": "HTTP"}))
	})
	check(t, "Lambda proxy integration, payload 2.0, to the api function", func() {
		tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Integration"), obj(map[string]any{
			"IntegrationType":      "AWS_PROXY",
			"PayloadFormatVersion": "2.0",
			"IntegrationUri":       obj(map[string]any{"Fn::GetAtt": arrayWith(assertions.Match_StringLikeRegexp(jsii.String("^ApiFunction")))}),
		}))
	})
	check(t, "catch-all $default route", func() {
		tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), obj(map[string]any{"RouteKey": "$default"}))
	})
	check(t, "auto-deployed $default stage", func() {
		tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), obj(map[string]any{"StageName": "$default", "AutoDeploy": true}))
	})
}

func TestAlarms(t *testing.T) {
	tpl, _ := template(t)
	t.Run("DLQ depth above zero", func(t *testing.T) {
		check(t, "dlq alarm", func() {
			tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), obj(map[string]any{
				"Namespace":          "AWS/SQS",
				"MetricName":         "ApproximateNumberOfMessagesVisible",
				"ComparisonOperator": "GreaterThanThreshold",
				"Threshold":          0,
				"Dimensions": arrayWith(obj(map[string]any{
					"Name":  "QueueName",
					"Value": obj(map[string]any{"Fn::GetAtt": arrayWith(assertions.Match_StringLikeRegexp(jsii.String("^TimeoutDeadLetters")))}),
				})),
			}))
		})
	})
	for _, fn := range []string{"ApiFunction", "SweeperFunction"} {
		t.Run(fn+" errors", func(t *testing.T) {
			check(t, fn+" alarm", func() {
				tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), obj(map[string]any{
					"Namespace":          "AWS/Lambda",
					"MetricName":         "Errors",
					"ComparisonOperator": "GreaterThanThreshold",
					"Threshold":          0,
					"Dimensions": arrayWith(obj(map[string]any{
						"Name":  "FunctionName",
						"Value": obj(map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^" + fn))}),
					})),
				}))
			})
		})
	}
}

func TestOutputs(t *testing.T) {
	tpl, _ := template(t)
	for _, name := range []string{"ApiUrl", "TableName", "TimeoutQueueUrl", "DeadLetterQueueUrl", "SweepQueueUrl", "ApiFunctionName", "SweeperFunctionName", "OperatorFunctionName", "AlarmTopicArn"} {
		t.Run(name, func(t *testing.T) {
			check(t, name, func() {
				tpl.HasOutput(jsii.String(name), obj(map[string]any{"Value": assertions.Match_AnyValue()}))
			})
		})
	}
}

func TestFailedAssertionIsReported(t *testing.T) {
	// A wrong expectation must fail: jsii reports it as a panic, which
	// check turns into a test error.
	tpl, _ := template(t)
	var reported bool
	func() {
		defer func() { reported = recover() != nil }()
		tpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(7))
	}()
	if !reported {
		t.Error("a wrong resource count did not fail the assertion")
	}
}

func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestLocalStackVariant(t *testing.T) {
	// LocalStack plans without API Gateway v2 get a function URL, and
	// x86_64 hosts may run x86_64 bootstraps.
	tpl, raw, err := synth(t, map[string]any{
		stack.ContextAPIFront:   "functionUrl",
		stack.ContextLambdaArch: "x86_64",
	})
	if err != nil {
		t.Fatalf("synthesize: %v", err)
	}
	for typ, n := range map[string]float64{
		"AWS::ApiGatewayV2::Api": 0,
		"AWS::Lambda::Url":       1,
		"AWS::Lambda::Function":  3,
	} {
		check(t, typ, func() { tpl.ResourceCountIs(jsii.String(typ), jsii.Number(n)) })
	}
	check(t, "function URL on the api function", func() {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Url"), obj(map[string]any{
			"AuthType":          "NONE",
			"TargetFunctionArn": obj(map[string]any{"Fn::GetAtt": arrayWith(assertions.Match_StringLikeRegexp(jsii.String("^ApiFunction")))}),
		}))
	})
	check(t, "ApiUrl output", func() {
		tpl.HasOutput(jsii.String("ApiUrl"), obj(map[string]any{"Value": assertions.Match_AnyValue()}))
	})
	for id, fn := range resources(raw, "AWS::Lambda::Function") {
		if a, _ := props(fn)["Architectures"].([]any); len(a) != 1 || a[0] != "x86_64" {
			t.Errorf("%s Architectures = %v, want [x86_64]", id, props(fn)["Architectures"])
		}
		// No stage writes access lines: the api's own line is the access line.
		if vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any); vars[stack.EnvAccessLog] != nil {
			t.Errorf("%s: %s = %v without a stage", id, stack.EnvAccessLog, vars[stack.EnvAccessLog])
		}
	}
}

// Behind the HTTP API a request writes one log line: the stage's access
// line (short keys, no headers); the api function's own per-request line
// is DEBUG there (DONT_ACCESS_LOG=stage), and no other function is told so.
func TestARequestWritesOneAccessLineBehindTheHTTPAPI(t *testing.T) {
	_, raw := template(t)
	for id, fn := range resources(raw, "AWS::Lambda::Function") {
		vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		want := any(nil)
		if strings.HasPrefix(id, "ApiFunction") {
			want = "stage"
		}
		if vars[stack.EnvAccessLog] != want {
			t.Errorf("%s: %s = %v, want %v", id, stack.EnvAccessLog, vars[stack.EnvAccessLog], want)
		}
	}
	// A dismiss's line, as the stage writes it, stays under 140 bytes:
	// each byte is billed (docs/aws.md: 26 more per line).
	line := strings.NewReplacer("$context.requestId", "JZ1pQj2tIAMEJ5Q=", "$context.identity.sourceIp", "203.0.113.10",
		"$context.httpMethod", "POST", "$context.path", "/v1/tools/dismiss", "$context.status", "200",
		"$context.responseLatency", "45", "$context.integrationErrorMessage", "-").Replace(stack.AccessLogFormat)
	if len(line) > 140 || strings.Contains(line, "$context") {
		t.Errorf("an access line is %d bytes: %s", len(line), line)
	}
}

func TestRejectsUnknownSettings(t *testing.T) {
	for key, value := range map[string]string{
		stack.ContextLambdaArch: "mips", stack.ContextAPIFront: "alb", stack.ContextTracing: "on",
		stack.ContextLogLevel: "loud", stack.ContextAPIConcurrency: "-1", stack.ContextSweeperConcurrency: "5",
		stack.ContextThrottleRate: "fast", stack.ContextWarmWrites: "4000", stack.ContextMaxWrites: "lots",
		stack.ContextAPIMemory: "64",
	} {
		if _, _, err := synth(t, map[string]any{key: value}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: err = %v, want a refusal naming the key", key, value, err)
		}
	}
}

// NewAccountConcurrency is the lowest account concurrency quota the
// default stack must deploy under: AWS gives some new accounts a quota of
// 10 concurrent executions (Lambda's quotas page, "new accounts may
// start below the default of 1,000"), and a function may reserve only
// what leaves 100 unreserved, so on such an account no reservation at all
// can be made (docs/aws.md, "Operations").
const NewAccountConcurrency = 10

// The default stack deploys on a new account: no function reserves
// concurrency (any reservation fails there), isolation is the SQS
// mappings' MaximumConcurrency (each at least 2, Lambda's minimum), and
// nothing else in the template needs a quota above a new account's.
func TestTheDefaultStackDeploysWithinANewAccountsQuotas(t *testing.T) {
	tpl, raw := template(t)
	for id, fn := range resources(raw, "AWS::Lambda::Function") {
		if r, ok := props(fn)["ReservedConcurrentExecutions"]; ok {
			t.Errorf("%s reserves %v concurrent executions; a new account (quota %d, 100 kept unreserved) cannot", id, r, NewAccountConcurrency)
		}
	}
	if strings.Contains(jsonString(raw), "ReservedConcurrentExecutions") || strings.Contains(jsonString(raw), "ProvisionedConcurrency") {
		t.Error("the default template reserves or provisions concurrency somewhere")
	}
	mappings := resources(raw, "AWS::Lambda::EventSourceMapping")
	if len(mappings) != 2 {
		t.Fatalf("%d event source mappings, want the timeout queue's and the sweep queue's", len(mappings))
	}
	var caps []float64
	for id, m := range mappings {
		sc, _ := props(m)["ScalingConfig"].(map[string]any)
		c, _ := sc["MaximumConcurrency"].(float64)
		if c < 2 {
			t.Errorf("%s MaximumConcurrency = %v: unbounded (or below Lambda's minimum of 2)", id, sc["MaximumConcurrency"])
		}
		caps = append(caps, c)
	}
	slices.Sort(caps)
	if want := []float64{stack.SweepQueueConcurrency, stack.SweeperQueueConcurrency}; !slices.Equal(caps, want) {
		t.Errorf("mapping caps %v, want %v", caps, want)
	}
	// The concurrency alarms watch a reservation; without one there is none.
	for id := range resources(raw, "AWS::CloudWatch::Alarm") {
		if strings.Contains(id, "ConcurrencyAlarm") {
			t.Errorf("%s watches a reservation the default stack does not make", id)
		}
	}
	check(t, "tracing is off by default", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), obj(map[string]any{
			"TracingConfig": assertions.Match_Absent(),
		}))
	})
}

// With the context options, the api and the sweeper reserve concurrency
// (the operator never does: an operator's invoke is rare), each with an
// alarm at 80 % of it.
func TestConcurrencyIsReservedOnlyWhenAsked(t *testing.T) {
	tpl, raw, err := synth(t, map[string]any{stack.ContextAPIConcurrency: "200", stack.ContextSweeperConcurrency: 20.0})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"ApiFunction": 200, "SweeperFunction": 20, "OperatorFunction": 0}
	for id, fn := range resources(raw, "AWS::Lambda::Function") {
		for prefix, n := range want {
			if !strings.HasPrefix(id, prefix) {
				continue
			}
			got, _ := props(fn)["ReservedConcurrentExecutions"].(float64)
			if got != n {
				t.Errorf("%s ReservedConcurrentExecutions = %v, want %v", id, got, n)
			}
		}
	}
	check(t, "18 alarms", func() { tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(18)) })
	for fn, threshold := range map[string]float64{"ApiFunction": 160, "SweeperFunction": 16} {
		check(t, fn+" concurrency alarm", func() {
			tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), obj(map[string]any{
				"MetricName": "ConcurrentExecutions",
				"Threshold":  threshold,
				"Dimensions": arrayWith(obj(map[string]any{
					"Name": "FunctionName", "Value": obj(map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^" + fn))}),
				})),
			}))
		})
	}
	// Only the api's reservation: the sweeper stays bounded by its mappings.
	// (The same synth gives the api 256 MB, dont:apiMemory, which the
	// others have already: the size is the api's alone to change.)
	_, raw, err = synth(t, map[string]any{stack.ContextAPIConcurrency: "50", stack.ContextAPIMemory: "256"})
	if err != nil {
		t.Fatal(err)
	}
	for id, fn := range resources(raw, "AWS::Lambda::Function") {
		r, ok := props(fn)["ReservedConcurrentExecutions"]
		if strings.HasPrefix(id, "ApiFunction") != ok || (ok && r != 50.0) {
			t.Errorf("%s ReservedConcurrentExecutions = %v (set %v)", id, r, ok)
		}
		if got := props(fn)["MemorySize"]; got != 256.0 {
			t.Errorf("%s: MemorySize = %v with %s=256", id, got, stack.ContextAPIMemory)
		}
	}
}

// A fresh on-demand table takes 4,000 write units a second before it
// throttles, ≈ 330 lifecycles/s, below the stage's default burst: the
// default stack warms the table's writes to DefaultWarmWrites. The
// write cap is off unless asked; asked, it caps the table and both
// indexes, and an unset warm value follows it down.
func TestTheTableIsWarmedAndCappedOnlyWhenAsked(t *testing.T) {
	_, raw := template(t)
	table := func(raw map[string]any) map[string]any {
		for _, r := range resources(raw, "AWS::DynamoDB::Table") {
			return props(r)
		}
		t.Fatal("no table")
		return nil
	}
	p := table(raw)
	if got := jsonString(p["WarmThroughput"]); got != fmt.Sprintf(`{"WriteUnitsPerSecond":%d}`, stack.DefaultWarmWrites) {
		t.Errorf("WarmThroughput = %s, want %d write units a second", got, stack.DefaultWarmWrites)
	}
	if p["OnDemandThroughput"] != nil || strings.Contains(jsonString(p), "MaxWriteRequestUnits") {
		t.Errorf("the default table is capped: %s", jsonString(p["OnDemandThroughput"]))
	}
	for _, c := range []struct {
		context     map[string]any
		warm, limit float64
	}{
		{map[string]any{stack.ContextMaxWrites: "20000"}, stack.DefaultWarmWrites, 20000},
		{map[string]any{stack.ContextMaxWrites: "6000"}, 6000, 6000},
		{map[string]any{stack.ContextMaxWrites: "1000"}, 0, 1000},
		{map[string]any{stack.ContextWarmWrites: "0"}, 0, 0},
		{map[string]any{stack.ContextWarmWrites: "30000"}, 30000, 0},
	} {
		_, raw, err := synth(t, c.context)
		if err != nil {
			t.Fatalf("%v: %v", c.context, err)
		}
		p := table(raw)
		warm, _ := p["WarmThroughput"].(map[string]any)
		if got, _ := warm["WriteUnitsPerSecond"].(float64); got != c.warm {
			t.Errorf("%v: warm writes %v, want %v", c.context, got, c.warm)
		}
		odt, _ := p["OnDemandThroughput"].(map[string]any)
		if got, _ := odt["MaxWriteRequestUnits"].(float64); got != c.limit {
			t.Errorf("%v: table cap %v, want %v", c.context, got, c.limit)
		}
		gsis, _ := p["GlobalSecondaryIndexes"].([]any)
		for _, g := range gsis {
			gm, _ := g.(map[string]any)
			odt, _ := gm["OnDemandThroughput"].(map[string]any)
			if got, _ := odt["MaxWriteRequestUnits"].(float64); got != c.limit {
				t.Errorf("%v: index %v cap %v, want %v", c.context, gm["IndexName"], got, c.limit)
			}
		}
	}
	if _, _, err := synth(t, map[string]any{stack.ContextMaxWrites: "5000", stack.ContextWarmWrites: "8000"}); err == nil || !strings.Contains(err.Error(), stack.ContextMaxWrites) {
		t.Errorf("warm above the cap: err = %v, want a refusal naming %s", err, stack.ContextMaxWrites)
	}
}

// Tracing is the operator's choice: active, each function traces and may
// write to X-Ray.
func TestTracingIsOptIn(t *testing.T) {
	tpl, raw, err := synth(t, map[string]any{stack.ContextTracing: "active"})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "active tracing", func() {
		tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), obj(map[string]any{
			"TracingConfig": map[string]any{"Mode": "Active"},
		}))
	})
	for _, role := range []string{"ApiRole", "SweeperRole", "OperatorRole"} {
		if !slices.Contains(actionsOf(policiesOf(raw, role)), "xray:PutTraceSegments") {
			t.Errorf("%s may not write traces", role)
		}
	}
	_, raw = template(t)
	for _, role := range []string{"ApiRole", "SweeperRole", "OperatorRole"} {
		if slices.ContainsFunc(actionsOf(policiesOf(raw, role)), func(a string) bool { return strings.HasPrefix(a, "xray:") }) {
			t.Errorf("%s may write traces with tracing off", role)
		}
	}
}

// The Slack app's secrets reach the functions that use them as
// CloudFormation dynamic references into the Secrets Manager secret the
// context names, so the template never holds them: the signing secret
// and the project on the api function, the bot token on the api and the
// sweeper (which deliver the slack-app hooks), nothing on the operator;
// the default stack sets none. The names are the ones the functions read.
func TestTheSlackAppsSettingsReachTheFunctionsThatUseThem(t *testing.T) {
	if stack.EnvSlackSigningSecret != settings.EnvSlackSigningSecret || stack.EnvSlackProject != settings.EnvSlackProject ||
		stack.EnvSlackBotToken != settings.EnvSlackBotToken || stack.EnvPublicURL != settings.EnvPublicURL {
		t.Fatal("the stack names the Slack app's variables otherwise than internal/settings")
	}
	ref := func(field string) string { return "{{resolve:secretsmanager:dont/slack:SecretString:" + field + "::}}" }
	want := map[string]map[string]string{
		"ApiFunction": {stack.EnvSlackSigningSecret: ref(stack.SlackSigningSecretField), stack.EnvSlackProject: "team-a",
			stack.EnvSlackBotToken: ref(stack.SlackBotTokenField), stack.EnvPublicURL: "https://dont.example.com"},
		"SweeperFunction":  {stack.EnvSlackBotToken: ref(stack.SlackBotTokenField), stack.EnvPublicURL: "https://dont.example.com"},
		"OperatorFunction": {stack.EnvPublicURL: "https://dont.example.com"},
	}
	slackVars := []string{stack.EnvSlackSigningSecret, stack.EnvSlackProject, stack.EnvSlackBotToken}
	t.Run("with a Slack app", func(t *testing.T) {
		_, raw, err := synth(t, map[string]any{stack.ContextSlackSecret: "dont/slack", stack.ContextSlackProject: "team-a",
			stack.ContextPublicURL: "https://dont.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		for id, fn := range resources(raw, "AWS::Lambda::Function") {
			vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
			for prefix, w := range want {
				if !strings.HasPrefix(id, prefix) {
					continue
				}
				for _, k := range append(slackVars, stack.EnvPublicURL) {
					if got, _ := vars[k].(string); got != w[k] {
						t.Errorf("%s: %s = %v, want %q", id, k, vars[k], w[k])
					}
				}
			}
		}
	})
	_, raw := template(t)
	for id, fn := range resources(raw, "AWS::Lambda::Function") {
		vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		for _, k := range append(slackVars, stack.EnvPublicURL) {
			if vars[k] != nil {
				t.Errorf("the default stack sets %s on %s", k, id)
			}
		}
	}
	for _, half := range []map[string]any{{stack.ContextSlackSecret: "dont/slack"}, {stack.ContextSlackProject: "team-a"}} {
		if _, _, err := synth(t, half); err == nil || !strings.Contains(err.Error(), stack.ContextSlackProject) {
			t.Errorf("%v alone: err = %v, want a refusal naming both keys", half, err)
		}
	}
}
