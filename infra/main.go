// Command infra is dont's AWS CDK app. cdk.json at the repository root runs
// it (`go run ./infra`); it only wires the stack defined in infra/stack.
//
// Context keys (cdk synth -c KEY=VALUE):
//
//	dont:stackName         stack name (default "Dont")
//	dont:apiAssetDir       directory holding the api function's bootstrap
//	dont:sweeperAssetDir   directory holding the sweeper function's bootstrap
//	dont:operatorAssetDir  directory holding the operator function's bootstrap
//	dont:lambdaArch, dont:apiFront, dont:apiConcurrency, dont:sweeperConcurrency,
//	dont:throttleRate, dont:throttleBurst, dont:alarmEmail, dont:tracing,
//	dont:logLevel          see infra/stack and docs/aws.md ("Operations")
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/dont-cli/dont/infra/stack"
)

func main() {
	defer jsii.Close()

	app := awscdk.NewApp(nil)
	name := "Dont"
	if v, ok := app.Node().TryGetContext(jsii.String("dont:stackName")).(string); ok && v != "" {
		name = v
	}
	stack.New(app, name, &stack.Props{})
	app.Synth(nil)
}
