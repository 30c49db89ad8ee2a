#!/bin/bash
# LocalStack ready hook (runs inside the container once LocalStack is up).
# It creates nothing — `cdklocal deploy` (localstack/deploy.sh) creates every
# resource from the CDK stack — but reports whether the services dont's
# stack needs are available in this LocalStack, so that a missing one shows
# up in `docker compose logs` before a deployment fails on it.
set -u

health="$(curl -fsS http://localhost:4566/_localstack/health 2>/dev/null || true)"
if [[ -z "$health" ]]; then
  echo "dont: could not read /_localstack/health" >&2
  exit 0
fi
python3 - "$health" <<'PY'
import json, sys

health = json.loads(sys.argv[1])
services = health.get("services", {})
needed = ["cloudformation", "dynamodb", "sqs", "lambda", "events", "cloudwatch",
          "logs", "iam", "s3", "ssm", "sts"]
missing = [s for s in needed if services.get(s) in (None, "disabled", "error")]
print("dont: LocalStack %s %s" % (health.get("edition", "?"), health.get("version", "?")))
if missing:
    print("dont: services the stack needs are not available: %s" % ", ".join(missing))
else:
    print("dont: every service the stack needs is available")
if services.get("apigatewayv2") in (None, "disabled", "error"):
    print("dont: API Gateway v2 is not available in this plan; "
          "deploy.sh will front the api function with a function URL")
PY
