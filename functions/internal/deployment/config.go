// Package deployment is what both Lambda functions share: their
// configuration from the environment, the AWS clients (built once per
// cold start), one service per project over the DynamoDB store, and the
// project registry the scheduled sweep walks.
package deployment

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/service"
)

// Environment variables. DONT_TABLE and DONT_TIMEOUT_QUEUE_URL are set by
// the CDK stack; region, credentials and endpoints come from the SDK's
// own defaults (AWS_REGION, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SQS, ...).
const (
	EnvTable           = "DONT_TABLE"
	EnvTimeoutQueueURL = "DONT_TIMEOUT_QUEUE_URL"
	EnvSpawnTimeout    = "DONT_SPAWN_TIMEOUT"
	EnvSweepLimit      = "DONT_SWEEP_LIMIT"
	EnvProjects        = "DONT_PROJECTS"
)

// DefaultSweepLimit bounds each project's scheduled sweep.
const DefaultSweepLimit = 1000

// Config is the functions' configuration.
type Config struct {
	Table    string
	QueueURL string
	// SpawnTimeout applies to every project (default 24h).
	SpawnTimeout time.Duration
	// SweepLimit bounds the scheduled sweep per project.
	SweepLimit int
	// Projects are swept by the schedule in addition to the registry.
	Projects []string
}

// ConfigFromEnv reads the configuration; getenv is os.Getenv in production.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Table:        strings.TrimSpace(getenv(EnvTable)),
		QueueURL:     strings.TrimSpace(getenv(EnvTimeoutQueueURL)),
		SpawnTimeout: service.DefaultSpawnTimeout,
		SweepLimit:   DefaultSweepLimit,
	}
	if c.Table == "" {
		return c, fmt.Errorf("%s is required: the DynamoDB table name", EnvTable)
	}
	if c.QueueURL == "" {
		return c, fmt.Errorf("%s is required: the spawn-timeout queue URL", EnvTimeoutQueueURL)
	}
	if v := getenv(EnvSpawnTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("%s must be a positive Go duration such as 90s or 24h, got %q", EnvSpawnTimeout, v)
		}
		c.SpawnTimeout = d
	}
	if v := getenv(EnvSweepLimit); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return c, fmt.Errorf("%s must be a positive integer, got %q", EnvSweepLimit, v)
		}
		c.SweepLimit = n
	}
	for _, p := range strings.Split(getenv(EnvProjects), ",") {
		if p = strings.TrimSpace(p); p != "" {
			c.Projects = append(c.Projects, p)
		}
	}
	return c, nil
}
