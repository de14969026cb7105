#!/usr/bin/env bash
# A benchmark job for CI: record the run (also when it fails), check the expectations kept in git, and write
# the scoreboard as Markdown for the pull request. Run it from a knowledge base's folder (kb.toml), or with
# $KB_HOME set. Writes kb-summary.md; exits 1 when an expectation fails or has no evidence, after the summary.
#   MODE=compiled STEPS=40 bash examples/ci-benchmark.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${MODE:-compiled}
steps=${STEPS:-40}
workload=${WORKLOAD:-tiny-lm}
summary=${SUMMARY:-kb-summary.md}

# The run itself: kb record writes its entry whatever happens to it, so a failure is evidence too.
kb record --workload "$workload" --backend cpu --mode "$mode" --tag ci ${CI_TAG:+--tag "$CI_TAG"} \
  -- python "$here/train_tiny_lm.py" --mode "$mode" --steps "$steps"
recorded=$?

# What must hold (expectations.toml beside kb.toml): pass, fail, improved or missing.
expect_out=$(kb expect 2>&1)
expected=$?

{
  echo "## kb: $workload"
  echo
  kb board --workload "$workload" --markdown
  echo
  echo "### Expectations"
  echo
  echo '```'
  echo "$expect_out"
  echo '```'
} > "$summary"
cat "$summary"

[ "$recorded" -eq 0 ] && [ "$expected" -eq 0 ]
