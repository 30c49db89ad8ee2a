// Package deploytest checks localstack/deploy.sh's parts that need no
// LocalStack: the exports of `env`, which a user evals and then runs the
// script again under.
package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"../deploy.sh"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// exports reads `export K=V ...` lines as bash would (values are
// single-quoted by the script).
func exports(t *testing.T, out string) map[string]string {
	t.Helper()
	cmd := exec.Command("bash", "-c", out+"\nenv -0")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("eval of %q: %v", out, err)
	}
	m := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func TestEnvExportsWhatALaterRunNeedsAndTheAPIURLLocalStackServes(t *testing.T) {
	dir := t.TempDir()
	outputs := `{"Dont":{"ApiUrl":"https://abc123.execute-api.us-east-1.amazonaws.com/","TableName":"t","TimeoutQueueUrl":"q",
		"ApiFunctionName":"api-fn","SweeperFunctionName":"sweeper-fn","OperatorFunctionName":"operator-fn"}}`
	if err := os.WriteFile(filepath.Join(dir, "Dont.outputs.json"), []byte(outputs), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"DONT_LOCALSTACK_DIR=" + dir, "AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_S3="}
	out, stderr, err := run(t, base, "env")
	if err != nil {
		t.Fatalf("env: %v\n%s", err, stderr)
	}
	first := exports(t, out)
	for k, want := range map[string]string{
		"AWS_ENDPOINT_URL":       "http://localhost:4566",
		"AWS_ENDPOINT_URL_S3":    "http://s3.localhost.localstack.cloud:4566",
		"DONT_API_URL":           "http://abc123.execute-api.localhost.localstack.cloud:4566/",
		"DONT_OPERATOR_FUNCTION": "operator-fn",
		"DONT_API_FUNCTION":      "api-fn",
	} {
		if first[k] != want {
			t.Errorf("%s = %q, want %q", k, first[k], want)
		}
	}
	// After eval "$(deploy.sh env)", env again and destroy must not stop at
	// the endpoint settings (destroy then needs LocalStack itself).
	again := append(base, "AWS_ENDPOINT_URL="+first["AWS_ENDPOINT_URL"], "AWS_ENDPOINT_URL_S3="+first["AWS_ENDPOINT_URL_S3"])
	if out2, stderr, err := run(t, again, "env"); err != nil || out2 != out {
		t.Errorf("a second env: %v %s\n%s", err, stderr, out2)
	}
	onlyEdge := append(base, "AWS_ENDPOINT_URL=http://127.0.0.1:1")
	_, stderr, err = run(t, onlyEdge, "destroy")
	if err == nil || !strings.Contains(stderr, "no LocalStack at http://127.0.0.1:1") {
		t.Errorf("destroy with only AWS_ENDPOINT_URL set: %v, stderr %q; want it to look for LocalStack", err, stderr)
	}
}
