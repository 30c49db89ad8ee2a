package deployment

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// NewLogger returns the functions' logger: JSON lines on w (Lambda sends
// stdout to CloudWatch Logs), each carrying aws_request_id when it is
// logged with the invocation's context. It also becomes slog's default,
// so that libraries logging through the log package write JSON too.
// Nothing the functions log contains a token: requests are logged by
// route, status and ids, never by headers or bodies. Lines below the
// function's application log level (AWS_LAMBDA_LOG_LEVEL, which Lambda
// sets from the stack's dont:logLevel) are not written at all, rather
// than written and dropped by Lambda.
func NewLogger(w io.Writer) *slog.Logger {
	l := slog.New(invocationHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: logLevel(os.Getenv(EnvLogLevel))})})
	slog.SetDefault(l)
	return l
}

// EnvLogLevel is the variable Lambda sets to the function's application
// log level (TRACE, DEBUG, INFO, WARN, ERROR, FATAL).
const EnvLogLevel = "AWS_LAMBDA_LOG_LEVEL"

// logLevel maps Lambda's level names to slog's; anything else is INFO.
func logLevel(v string) slog.Level {
	switch strings.ToUpper(v) {
	case "TRACE", "DEBUG":
		return slog.LevelDebug
	case "WARN":
		return slog.LevelWarn
	case "ERROR", "FATAL":
		return slog.LevelError
	}
	return slog.LevelInfo
}

type invocationHandler struct{ slog.Handler }

func (h invocationHandler) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		r.AddAttrs(slog.String("aws_request_id", lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h invocationHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return invocationHandler{h.Handler.WithAttrs(as)}
}

func (h invocationHandler) WithGroup(name string) slog.Handler {
	return invocationHandler{h.Handler.WithGroup(name)}
}

// EnvAccessLog says who writes the one access line per request: "stage"
// (the stack sets it behind the HTTP API, whose stage writes a JSON
// access-log line for every request) makes the api function's own
// per-request line (CallLogger) a DEBUG line, so that a request costs one
// log line, not two (docs/aws.md, "Cost per million lifecycles, logs
// included"). Unset (the function-URL variant, which has no stage), the
// function's line is the access line and stays INFO.
const EnvAccessLog = "DONT_ACCESS_LOG"

// CallLogger is the logger the API handler writes its per-request "call"
// line with: log itself, or, when the stage writes the access lines
// (EnvAccessLog=stage), log with its INFO lines written as DEBUG (WARN and
// ERROR lines unchanged).
func CallLogger(log *slog.Logger) *slog.Logger {
	if os.Getenv(EnvAccessLog) != "stage" {
		return log
	}
	return slog.New(demoted{log.Handler()})
}

// demoted writes INFO records as DEBUG ones.
type demoted struct{ slog.Handler }

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (h demoted) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, demote(l))
}

func (h demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h demoted) WithAttrs(as []slog.Attr) slog.Handler { return demoted{h.Handler.WithAttrs(as)} }
func (h demoted) WithGroup(name string) slog.Handler    { return demoted{h.Handler.WithGroup(name)} }
