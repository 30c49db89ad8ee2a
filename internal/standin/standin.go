// Package standin gives tests a DynamoDB-compatible endpoint: the one named
// by DONT_DYNAMO_ENDPOINT (or AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL),
// else the CI stand-in localstack/dynamostandin, built (internal/gobuild)
// and started on a free loopback port; and a KMS-compatible one the same
// way (localstack/kmsstandin).
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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/dont-cli/dont/internal/gobuild"
)

// Dynamo returns an endpoint and a stop function (a no-op for an endpoint
// from the environment).
func Dynamo() (endpoint string, stop func(), err error) {
	return start("the DynamoDB stand-in", "dynamostandin", "DONT_DYNAMO_ENDPOINT", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL")
}

// KMS returns a KMS-compatible endpoint: the one named by
// DONT_KMS_ENDPOINT (or AWS_ENDPOINT_URL_KMS, AWS_ENDPOINT_URL), else the
// CI stand-in localstack/kmsstandin, built and started on a free loopback
// port; and a stop function.
func KMS() (endpoint string, stop func(), err error) {
	return start("the KMS stand-in", "kmsstandin", "DONT_KMS_ENDPOINT", "AWS_ENDPOINT_URL_KMS", "AWS_ENDPOINT_URL")
}

// start returns the first endpoint envs name, or builds
// localstack/<command>, starts it on a free loopback port and reads the
// "listening URL" line it prints.
func start(what, command string, envs ...string) (endpoint string, stop func(), err error) {
	for _, v := range envs {
		if e := os.Getenv(v); e != "" {
			return e, func() {}, nil
		}
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	bin, err := gobuild.Executable(root, nil, "./localstack/"+command)
	if err != nil {
		return "", nil, fmt.Errorf("build %s: %v", what, err)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
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
		return "", nil, fmt.Errorf("%s did not print its address within 30s", what)
	}
}

// KMSClient is a KMS client for endpoint, with test credentials.
func KMSClient(endpoint string) *awskms.Client {
	return awskms.New(awskms.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   &http.Client{Timeout: 30 * time.Second},
	})
}

// Client is a DynamoDB client for endpoint through transport (nil: the
// default), with test credentials.
func Client(endpoint string, transport http.RoundTripper, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	if transport == nil {
		transport = http.DefaultTransport
	}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   &http.Client{Transport: transport, Timeout: 30 * time.Second},
	}, optFns...)
}

// EnvClient is a DynamoDB client for endpoint as the store tests make it:
// region and credentials from the environment (LocalStack, or a real
// endpoint a developer points them at), test values otherwise, through
// transport (nil: the default), with extra middleware (a capacity
// counter's Register, say).
func EnvClient(endpoint string, transport http.RoundTripper, apiOptions ...func(*middleware.Stack) error) *dynamodb.Client {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" {
		id, secret = "test", "test"
	}
	if transport == nil {
		transport = http.DefaultTransport
	}
	return dynamodb.New(dynamodb.Options{
		Region:       region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(id, secret, os.Getenv("AWS_SESSION_TOKEN")),
		HTTPClient:   &http.Client{Transport: transport, Timeout: 60 * time.Second},
		APIOptions:   apiOptions,
	})
}

// SQSClient is an SQS client for endpoint (fauxqs, LocalStack) through
// transport (nil: the default), with test credentials.
func SQSClient(endpoint string, transport http.RoundTripper, optFns ...func(*awssqs.Options)) *awssqs.Client {
	if transport == nil {
		transport = http.DefaultTransport
	}
	return awssqs.New(awssqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:   &http.Client{Transport: transport, Timeout: 30 * time.Second},
	}, optFns...)
}
