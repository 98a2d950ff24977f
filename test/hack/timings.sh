#!/usr/bin/env bash
# Prints the rows test/hack/timed.sh recorded as one table, in the order the steps started, so
# that every `make test` log ends with where its minutes went (docs/development.md, Where the
# time goes). A target's recipe lines (one row each) add up to one step.
# Usage: timings.sh TIMINGS_FILE
set -euo pipefail
file=$1
if [[ ! -s $file ]]; then
	echo "no step timings in $file"
	exit 0
fi

echo "Where the time went (minutes:seconds from the first step's start; $file):"
printf '%8s %8s %8s %5s  %s\n' start wall cpu exit step
awk -F'\t' '
function clock(s) { s = int(s + 0.5); return sprintf("%d:%02d", int(s / 60), s % 60) }
{
	key = $1 SUBSEP $6
	if (!(key in first) || $2 + 0 < first[key]) first[key] = $2 + 0
	step[key] = $1
	if (NR == 1 || $2 + 0 < origin) origin = $2 + 0
	if ($3 == "-") { started[key]++; next }
	ended[key]++
	if ($3 + 0 > last[key]) last[key] = $3 + 0
	if ($3 + 0 > end) end = $3 + 0
	if ($4 != "-") cpu[key] += $4
	if ($5 != 0) status[key] = $5
}
END {
	for (key in first) {
		if (ended[key] < started[key]) {
			row = sprintf("%8s %8s %8s %5s  %s (did not end)", clock(first[key] - origin), "-", "-", "-", step[key])
		} else {
			row = sprintf("%8s %8s %8s %5d  %s", clock(first[key] - origin), clock(last[key] - first[key]),
				clock(cpu[key]), status[key], step[key])
		}
		printf "%.6f\t%s\n", first[key], row
	}
	printf "%.6f\t%8s %8s %8s %5s  %s\n", end + 1, "", clock(end - origin), "", "", "from the first start to the last end"
}' "$file" | sort -t$'\t' -k1,1n | cut -f2-
