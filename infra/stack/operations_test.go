package stack_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dont-cli/dont/infra/stack"
	"github.com/dont-cli/dont/internal/store/dynamo"
)

// TestTableActionsAreTheOnesTheCodeCalls reads the DynamoDB calls the
// functions' code makes and checks the policy grants exactly those: no
// unused action (least privilege), none missing (a denied call in
// production). TransactWriteItems is authorised by its parts.
func TestTableActionsAreTheOnesTheCodeCalls(t *testing.T) {
	call := regexp.MustCompile(`\.(GetItem|BatchGetItem|PutItem|UpdateItem|DeleteItem|Query|Scan|BatchWriteItem|TransactWriteItems|TransactGetItems|DescribeTable|CreateTable)\(ctx`)
	called := map[string]bool{}
	for _, dir := range []string{"../../internal/store/dynamo", "../../functions/internal/deployment", "../../internal/scheduler/sqs"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, "table.go") { // table.go: test and setup tables only
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range call.FindAllStringSubmatch(string(b), -1) {
				called[m[1]] = true
			}
		}
	}
	if len(called) == 0 {
		t.Fatal("found no DynamoDB calls: the pattern or the paths are stale")
	}
	var need []string
	for op := range called {
		switch op {
		case "TransactWriteItems":
			need = append(need, "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
		case "TransactGetItems":
			need = append(need, "dynamodb:GetItem")
		default:
			need = append(need, "dynamodb:"+op)
		}
	}
	slices.Sort(need)
	need = slices.Compact(need)
	granted := slices.Clone(stack.TableActions)
	slices.Sort(granted)
	if !slices.Equal(need, granted) {
		t.Errorf("the code calls %v; stack.TableActions grants %v", need, granted)
	}
}

func TestEveryAlarmNotifiesTheTopic(t *testing.T) {
	_, raw := template(t)
	alarms := resources(raw, "AWS::CloudWatch::Alarm")
	if len(alarms) == 0 {
		t.Fatal("no alarms")
	}
	for id, a := range alarms {
		if !strings.Contains(jsonString(props(a)["AlarmActions"]), "Alarms") {
			t.Errorf("%s notifies nobody: AlarmActions = %v", id, props(a)["AlarmActions"])
		}
	}
	watched := map[string]bool{}
	for _, a := range alarms {
		p := props(a)
		if name, ok := p["MetricName"].(string); ok {
			watched[name] = true
		}
		for _, m := range asSlice(p["Metrics"]) {
			mm, _ := m.(map[string]any)
			stat, _ := mm["MetricStat"].(map[string]any)
			metric, _ := stat["Metric"].(map[string]any)
			if name, ok := metric["MetricName"].(string); ok {
				watched[name] = true
			}
		}
	}
	// ConcurrentExecutions is watched only with a reservation
	// (TestConcurrencyIsReservedOnlyWhenAsked).
	for _, name := range []string{
		"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage", "Errors", "Throttles",
		"Duration", "5xx", "SystemErrors", "ReadThrottleEvents", "WriteThrottleEvents",
		"Invocations", "FailedInvocations",
	} {
		if !watched[name] {
			t.Errorf("no alarm watches %s; watched: %v", name, keys(watched))
		}
	}
	t.Run("an email from the context subscribes to the topic", func(t *testing.T) {
		_, raw, err := synth(t, map[string]any{stack.ContextAlarmEmail: "oncall@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		subs := resources(raw, "AWS::SNS::Subscription")
		if len(subs) != 1 || props(firstOf(subs))["Endpoint"] != "oncall@example.com" || props(firstOf(subs))["Protocol"] != "email" {
			t.Errorf("subscriptions = %v", subs)
		}
	})
}

func TestIsolationAndThrottling(t *testing.T) {
	_, raw := template(t)
	fns := resources(raw, "AWS::Lambda::Function")
	reserved := map[string]float64{}
	for id, fn := range fns {
		p := props(fn)
		name := strings.TrimSuffix(id[:strings.Index(id, "Function")+len("Function")], "Function")
		reserved[name], _ = p["ReservedConcurrentExecutions"].(float64)
		if name == "Operator" && p["ReservedConcurrentExecutions"] != nil {
			t.Errorf("the operator function reserves concurrency: %v", p["ReservedConcurrentExecutions"])
		}
		if p["TracingConfig"] != nil {
			t.Errorf("%s TracingConfig = %v, want none (dont:tracing is opt-in)", id, p["TracingConfig"])
		}
		if lc, _ := p["LoggingConfig"].(map[string]any); lc["ApplicationLogLevel"] != "INFO" {
			t.Errorf("%s LoggingConfig = %v, want ApplicationLogLevel INFO", id, lc)
		}
	}
	if reserved["Api"] != stack.DefaultAPIConcurrency || reserved["Sweeper"] != stack.DefaultSweeperConcurrency {
		t.Errorf("reserved concurrency = %v", reserved)
	}
	// One mapping per queue: the timeout queue's at SweeperQueueConcurrency,
	// the sweep work queue's at SweepQueueConcurrency: with no reservation
	// by default, they are what bounds a timeout burst.
	total := 0.0
	for id, m := range resources(raw, "AWS::Lambda::EventSourceMapping") {
		sc, _ := props(m)["ScalingConfig"].(map[string]any)
		want := float64(stack.SweeperQueueConcurrency)
		if strings.Contains(jsonString(props(m)["EventSourceArn"]), "SweepQueue") {
			want = stack.SweepQueueConcurrency
		}
		if sc["MaximumConcurrency"] != want {
			t.Errorf("%s ScalingConfig = %v, want MaximumConcurrency %v", id, sc, want)
		}
		total += want
	}
	if total != stack.SweeperQueueConcurrency+stack.SweepQueueConcurrency || stack.DefaultSweeperConcurrency != 0 {
		t.Errorf("the mappings' maximum concurrency adds up to %v, want %d; default sweeper reservation %d, want none",
			total, stack.SweeperQueueConcurrency+stack.SweepQueueConcurrency, stack.DefaultSweeperConcurrency)
	}
	t.Run("a reservation must leave the schedule a slot above the mappings", func(t *testing.T) {
		if _, _, err := synth(t, map[string]any{stack.ContextSweeperConcurrency: fmt.Sprint(int(total))}); err == nil {
			t.Errorf("a sweeper reservation of %v (the mappings' total) was accepted", total)
		}
	})
	t.Run("the schedule's failed runs are not retried by Lambda", func(t *testing.T) {
		configs := resources(raw, "AWS::Lambda::EventInvokeConfig")
		if len(configs) != 1 || props(firstOf(configs))["MaximumRetryAttempts"] != float64(0) ||
			!strings.Contains(jsonString(props(firstOf(configs))["FunctionName"]), "Sweeper") {
			t.Errorf("event invoke configs = %v", configs)
		}
	})
	t.Run("stage throttling and JSON access logs without headers", func(t *testing.T) {
		stages := resources(raw, "AWS::ApiGatewayV2::Stage")
		if len(stages) != 1 {
			t.Fatalf("stages = %v", stages)
		}
		p := props(firstOf(stages))
		rs, _ := p["DefaultRouteSettings"].(map[string]any)
		if rs["ThrottlingRateLimit"] != float64(stack.DefaultThrottleRate) || rs["ThrottlingBurstLimit"] != float64(stack.DefaultThrottleBurst) {
			t.Errorf("DefaultRouteSettings = %v", rs)
		}
		al, _ := p["AccessLogSettings"].(map[string]any)
		format, _ := al["Format"].(string)
		if al["DestinationArn"] == nil || !strings.HasPrefix(format, "{") || strings.Contains(strings.ToLower(format), "authorization") || strings.Contains(format, "header") {
			t.Errorf("AccessLogSettings = %v", al)
		}
	})
	t.Run("table deletion protection and tags", func(t *testing.T) {
		for id, tbl := range resources(raw, "AWS::DynamoDB::Table") {
			p := props(tbl)
			if p["DeletionProtectionEnabled"] != true {
				t.Errorf("%s DeletionProtectionEnabled = %v", id, p["DeletionProtectionEnabled"])
			}
			if !strings.Contains(jsonString(p["Tags"]), `"Key":"app","Value":"dont"`) {
				t.Errorf("%s Tags = %v", id, p["Tags"])
			}
		}
	})
	t.Run("settings from the context", func(t *testing.T) {
		_, raw, err := synth(t, map[string]any{
			stack.ContextAPIConcurrency: "0", stack.ContextSweeperConcurrency: "50",
			stack.ContextTracing: "active", stack.ContextLogLevel: "WARN",
		})
		if err != nil {
			t.Fatal(err)
		}
		for id, fn := range resources(raw, "AWS::Lambda::Function") {
			p := props(fn)
			r, has := p["ReservedConcurrentExecutions"]
			switch {
			case strings.HasPrefix(id, "Api") && has:
				t.Errorf("%s reserves %v with %s=0", id, r, stack.ContextAPIConcurrency)
			case strings.HasPrefix(id, "Sweeper") && r != float64(50):
				t.Errorf("%s reserves %v, want 50", id, r)
			}
			if jsonString(p["TracingConfig"]) != `{"Mode":"Active"}` {
				t.Errorf("%s TracingConfig = %v with tracing active", id, p["TracingConfig"])
			}
			if lc, _ := p["LoggingConfig"].(map[string]any); lc["ApplicationLogLevel"] != "WARN" {
				t.Errorf("%s LoggingConfig = %v", id, lc)
			}
		}
	})
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func firstOf(m map[string]map[string]any) map[string]any {
	for _, k := range keys(m) {
		return m[k]
	}
	return nil
}

// TestTheIndexesAreTheOnesTheStoreQueries checks the table's key and
// index names against the store's, and that every index the store
// queries is one the stack defines and grants (the grant names indexes,
// never index/*).
func TestTheIndexesAreTheOnesTheStoreQueries(t *testing.T) {
	pairs := [][2]string{
		{stack.PartitionKey, dynamo.PartitionKey}, {stack.SortKey, dynamo.SortKey}, {stack.TTLAttribute, dynamo.TTLAttribute},
		{stack.PendingExpiryIndex, dynamo.PendingExpiryIndex}, {stack.PendingKey, dynamo.PendingKey}, {stack.ExpiresAtKey, dynamo.ExpiresAtKey},
		{stack.EntityStatusIndex, dynamo.EntityStatusIndex}, {stack.StatusKey, dynamo.StatusKey},
		{stack.EnvPendingShards, dynamo.EnvPendingShards},
	}
	if stack.DefaultPendingShards != dynamo.DefaultPendingShards || stack.MaxPendingShards != dynamo.MaxPendingShards {
		t.Errorf("pending shards: the stack's default %d and maximum %d, the store's %d and %d",
			stack.DefaultPendingShards, stack.MaxPendingShards, dynamo.DefaultPendingShards, dynamo.MaxPendingShards)
	}
	for _, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("the stack names %q where the store names %q", p[0], p[1])
		}
	}
	uses := regexp.MustCompile(`IndexName:\s+aws\.String\((\w+)\)`)
	files, _ := filepath.Glob("../../internal/store/dynamo/*.go")
	queried := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, "table.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uses.FindAllStringSubmatch(string(b), -1) {
			queried[m[1]] = true
		}
	}
	known := map[string]bool{"PendingExpiryIndex": true, "EntityStatusIndex": true}
	if len(queried) == 0 {
		t.Fatal("found no index queries in internal/store/dynamo")
	}
	for name := range queried {
		if !known[name] {
			t.Errorf("the store queries index %s, which the stack neither defines nor grants", name)
		}
	}
}

// Every function gets the same shard count, so that the spawns one writes
// are in the shards the others sweep.
func TestEveryFunctionSweepsTheShardsTheOthersWrite(t *testing.T) {
	for _, tc := range []struct {
		context map[string]any
		want    string
	}{{nil, "1"}, {map[string]any{stack.ContextPendingShards: "4"}, "4"}} {
		t.Run(stack.ContextPendingShards+"="+tc.want, func(t *testing.T) {
			raw := map[string]any(nil)
			if tc.context == nil {
				_, raw = template(t) // the default stack
			} else {
				var err error
				if _, raw, err = synth(t, tc.context); err != nil {
					t.Fatal(err)
				}
			}
			n := 0
			for id, fn := range resources(raw, "AWS::Lambda::Function") {
				vars, _ := props(fn)["Environment"].(map[string]any)
				v, _ := vars["Variables"].(map[string]any)
				if v == nil || v[stack.EnvTable] == nil {
					continue // not one of dont's functions (a CDK helper)
				}
				n++
				if got := fmt.Sprint(v[stack.EnvPendingShards]); got != tc.want {
					t.Errorf("%s: %s = %s, want %s", id, stack.EnvPendingShards, got, tc.want)
				}
			}
			if n != 3 {
				t.Errorf("%d functions read the table, want 3", n)
			}
		})
	}
	t.Run("out of range", func(t *testing.T) {
		for _, bad := range []string{"0", "65"} {
			if _, _, err := synth(t, map[string]any{stack.ContextPendingShards: bad}); err == nil {
				t.Errorf("%s=%s synthesised", stack.ContextPendingShards, bad)
			}
		}
	})
}
