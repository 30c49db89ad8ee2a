package stack_test

import (
	"os"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// TestMain ends the jsii kernel (a Node.js process) the syntheses started
// and lets it remove its runtime folder; without it every run left a
// jsii-runtime.* folder in the temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}
