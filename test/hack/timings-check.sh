#!/usr/bin/env bash
# timed.sh runs its command unchanged (arguments, standard input, exit status) and records one
# start row and one end row; timings.sh adds a target's recipe lines up to one step, keeps a
# target two makes ran apart, and marks a step that never ended.
set -euo pipefail
hack="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "timings-check: $*" >&2; exit 1; }

export KUBEGRAY_TIMINGS=$tmp/timings.tsv
status=0
out="$(echo in | "$hack/timed.sh" step -- bash -c 'read -r line; echo "$line $1"; exit 3' _ arg)" || status=$?
[[ $out == "in arg" ]] || fail "timed.sh passed on \"$out\", want \"in arg\""
((status == 3)) || fail "timed.sh exited $status, want the command's 3"
awk -F'\t' 'NR == 1 && $1 == "step" && $3 == "-" { start = 1 }
	NR == 2 && $1 == "step" && $3 > $2 && $4 ~ /^[0-9]+\.[0-9][0-9]$/ && $5 == 3 { end = 1 }
	END { exit !(NR == 2 && start && end) }' "$KUBEGRAY_TIMINGS" ||
	fail "timed.sh recorded $(cat "$KUBEGRAY_TIMINGS"), want a start and an end row for step, exit 3"
"$hack/timed.sh" -- true
[[ $(wc -l <"$KUBEGRAY_TIMINGS") -eq 2 ]] || fail "timed.sh without a step recorded a row"

# Two recipe lines of vet, build run by two makes (pids 10 and 20), a failed test-e2e, a
# control-plane build killed before its end.
printf '%s\t%s\t%s\t%s\t%s\t%s\n' \
	vet 1000.0 - - - 10 vet 1000.0 1020.0 30.00 0 10 vet 1020.5 - - - 10 vet 1020.5 1031.0 9.50 0 10 \
	controlplane 1000.2 - - - 5 \
	build 1031.5 - - - 10 build 1031.5 1040.0 12.00 0 10 \
	build 1100.0 - - - 20 build 1100.0 1101.0 0.40 0 20 \
	test-e2e 1110.0 - - - 20 test-e2e 1110.0 2510.0 1290.00 1 20 >"$tmp/fixture.tsv"
want="Where the time went (minutes:seconds from the first step's start; $tmp/fixture.tsv):
   start     wall      cpu  exit  step
    0:00     0:31     0:40     0  vet
    0:00        -        -     -  controlplane (did not end)
    0:32     0:09     0:12     0  build
    1:40     0:01     0:00     0  build
    1:50    23:20    21:30     1  test-e2e
            25:10                 from the first start to the last end"
got="$("$hack/timings.sh" "$tmp/fixture.tsv")"
[[ $got == "$want" ]] || fail "timings.sh printed
$got
want
$want"
echo "timings-check: timed.sh records and passes the exit status on; timings.sh adds steps up"
