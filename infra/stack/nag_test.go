package stack_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/dont-cli/dont/infra/stack"
)

// TestCdkNagFindsNothingUnsuppressed runs cdk-nag's AwsSolutions and
// Serverless packs over the default stack and the LocalStack variant. Every
// finding must be fixed or suppressed in stack.go with a reason; an error
// or a warning fails the test.
func TestCdkNagFindsNothingUnsuppressed(t *testing.T) {
	variants := map[string]map[string]any{
		"default":    nil,
		"localstack": {stack.ContextAPIFront: "functionUrl", stack.ContextLambdaArch: "x86_64"},
		"reserved, traced and capped": {stack.ContextAPIConcurrency: "200", stack.ContextSweeperConcurrency: "20",
			stack.ContextTracing: "active", stack.ContextMaxWrites: "20000"},
		"with a Slack app": {stack.ContextSlackSecret: "dont/slack", stack.ContextSlackProject: "team-a",
			stack.ContextPublicURL: "https://dont.example.com"},
	}
	for name, extra := range variants {
		if testing.Short() && name != "default" {
			// Each variant is a synthesis under both packs, about 20 s on
			// 2 cores: -short checks the default stack, and .ci/run's
			// full-budget run of infra/stack checks every variant.
			continue
		}
		t.Run(name, func(t *testing.T) {
			var findings []string
			if extra == nil {
				template(t) // the default stack's one synthesis
				findings = synthesized.nagFindings
			} else {
				findings = nag(t, extra)
			}
			for _, f := range findings {
				t.Errorf("cdk-nag: %s", f)
			}
		})
	}
}

// nag synthesizes the stack under both packs and returns every unsuppressed
// error and warning as "path: message".
func nag(t *testing.T, extra map[string]any) []string {
	t.Helper()
	needNode(t)
	dir := t.TempDir()
	context := map[string]any{}
	for _, fn := range []string{"api", "sweeper", "operator"} {
		d := filepath.Join(dir, fn)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "bootstrap"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	context[stack.ContextAPIAssetDir] = filepath.Join(dir, "api")
	context[stack.ContextSweeperAssetDir] = filepath.Join(dir, "sweeper")
	context[stack.ContextOperatorAssetDir] = filepath.Join(dir, "operator")
	for k, v := range extra {
		context[k] = v
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "cdk.out")), Context: &context})
	s := stack.New(app, "DontNag", nil)
	addNagPacks(app)
	return nagFindings(s.Stack)
}

// addNagPacks applies cdk-nag's AwsSolutions and Serverless packs to app.
func addNagPacks(app awscdk.App) {
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true), Reports: jsii.Bool(false)}), nil)
	awscdk.Aspects_Of(app).Add(cdknag.NewServerlessChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true), Reports: jsii.Bool(false)}), nil)
}

// nagFindings returns every unsuppressed error and warning of the packs
// on s, as "path: message".
func nagFindings(s awscdk.Stack) []string {
	anns := assertions.Annotations_FromStack(s)
	var out []string
	// HasNoError and HasNoWarning fail (a jsii panic) with every finding
	// in the message.
	for what, assert := range map[string]func(){
		"error":   func() { anns.HasNoError(jsii.String("*"), assertions.Match_AnyValue()) },
		"warning": func() { anns.HasNoWarning(jsii.String("*"), assertions.Match_AnyValue()) },
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					out = append(out, what+": "+fmt.Sprint(r))
				}
			}()
			assert()
		}()
	}
	slices.Sort(out)
	return out
}
