#!/usr/bin/env bash
# The main job, end to end: set up the machine, bring up the local environment (control plane,
# node agent, databases, registry, git server), show it working, and always take it down again.
# Each act is a function so later issues can add theirs (the operator's worked example) in order.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

# shellcheck source=scripts/setup.sh
source scripts/setup.sh

# A directory of its own, so the demo never touches an environment someone else brought up.
export PTAH_ENV_DIR="${PTAH_ENV_DIR:-${TMPDIR:-/tmp}/ptah-demo-env}"

environment_up() {
  npm run -s env -- up
}

environment_down() {
  npm run -s env -- down
}

# Act 1: a Job created by the ordinary user runs a local program on the node agent; its log is
# read back through the API server.
act_job_on_node_agent() {
  node --import tsx test/env/demo-job.ts
}

# Act 2: the operator's worked example. The admin installs the operator with helm (the chart in
# deploy/helm/ptah-operator: the manager runs as the Deployment's two Pods on the node agent, serving
# the webhooks behind their Service); the ordinary user declares a schema (apply: OnApproval) for a
# fresh PostgreSQL database; the approver approves the published plan; the database converges and the
# journal shows it; then the same people run two versioned migrations with a PtahMigration (plan,
# approval, apply, history read back); the release is uninstalled.
act_operator_worked_example() {
  node --import tsx test/env/demo-operator.ts
}

trap environment_down EXIT
environment_up
act_job_on_node_agent
act_operator_worked_example
