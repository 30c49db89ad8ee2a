package standin

import (
	"net/http"
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
	return start("the EventBridge stand-in", "eventbridgestandin", "DONT_EVENTBRIDGE_ENDPOINT", "AWS_ENDPOINT_URL_EVENTBRIDGE")
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
