#!/usr/bin/env bash
# Every recorder test over the whole Borg trace and with every setting. CI plays the first
# 8,000 of its 26,250 events where an engine's cost grows with the input (Spark: about a second
# per micro-batch), and records one third of each test's settings, rotating by day; this
# plays all events and records every setting, about 2.5 times as long for Spark and three
# times as many recordings (docs/fidelity.md).
#   scripts/record-all.sh              every engine's recorder tests
#   scripts/record-all.sh spark_recorder   one test file
set -euo pipefail
cd "$(dirname "$0")/.."
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(flink_recorder spark_recorder kafka_streams_recorder kafka_streams_application)
fi
args=()
for t in "${tests[@]}"; do
  args+=(--test "$t")
done
GADGET_RECORDER_EVENTS=all GADGET_RECORDER_SETTINGS=all exec cargo test --locked -p gadget-cli "${args[@]}"
