package standin

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
)

// EventBridge returns an EventBridge endpoint and a stop function: the one
// named by DONT_EVENTBRIDGE_ENDPOINT or AWS_ENDPOINT_URL_EVENTBRIDGE
// (LocalStack), else the stand-in localstack/eventbridgestandin, built
// and started on a free loopback port. The same client code runs against
// either: only the endpoint differs.
func EventBridge() (endpoint string, stop func(), err error) {
	for _, v := range []string{"DONT_EVENTBRIDGE_ENDPOINT", "AWS_ENDPOINT_URL_EVENTBRIDGE"} {
		if e := os.Getenv(v); e != "" {
			return e, func() {}, nil
		}
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	dir, err := os.MkdirTemp("", "dont-eventbridge")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "eventbridgestandin")
	build := exec.Command("go", "build", "-o", bin, "./localstack/eventbridgestandin")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("build the EventBridge stand-in: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop = func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		os.RemoveAll(dir)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if url, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				line <- url
			}
		}
	}()
	select {
	case url := <-line:
		return url, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, fmt.Errorf("the EventBridge stand-in did not print its address within 30s")
	}
}

// EventBridgeClient is an EventBridge client for endpoint with test credentials.
func EventBridgeClient(endpoint string) *eventbridge.Client {
	return eventbridge.New(eventbridge.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   &http.Client{Timeout: 30 * time.Second},
	})
}
