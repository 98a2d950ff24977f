#!/usr/bin/env bash
# Runs COMMAND and appends its wall and CPU time to $KUBEGRAY_TIMINGS, for the summary that
# `make test` prints at its end (test/hack/timings.sh; docs/development.md, Where the time goes).
# Usage: timed.sh STEP -- COMMAND [ARG...]
#        timed.sh -- COMMAND [ARG...]     runs COMMAND and records nothing
# Under `make test` this is make's SHELL with the target as STEP, so every recipe is timed
# without a recipe changing; make's $(shell ...) outside a recipe has no target to record.
#
# Rows are tab-separated: step, start, end (Unix seconds), CPU seconds (user+sys of COMMAND and
# of what it waited for), exit status, and the pid of the make or shell that ran it, so that a
# target two makes run reads as two rows. A row with end "-" is written first, so that a step
# killed before its end still shows as started.
#
# COMMAND runs in the foreground with this script's signals and file descriptors, as it would
# without it, and its exit status is this script's.
step=
if [[ ${1-} != -- ]]; then
	step=${1-}
	shift
fi
if [[ ${1-} != -- ]]; then
	echo "usage: timed.sh [STEP] -- COMMAND [ARG...]" >&2
	exit 2
fi
shift
if [[ -z $step || -z ${KUBEGRAY_TIMINGS-} ]]; then
	exec "$@"
fi

start=$EPOCHREALTIME
printf '%s\t%s\t-\t-\t-\t%s\n' "$step" "$start" "$PPID" >>"$KUBEGRAY_TIMINGS"
"$@"
status=$?
end=$EPOCHREALTIME

# The CPU time of the children this shell waited for (fields 16 and 17 of /proc/PID/stat,
# cutime and cstime, in clock ticks of 1/100 s), read with builtins: `times` in a pipe or a
# command substitution would run in a subshell, whose children are not COMMAND.
cpu=-
if read -r stat </proc/$$/stat 2>/dev/null; then
	read -ra fields <<<"${stat##*) }" # fields[0] is field 3: the command name may hold spaces
	ticks=$((fields[13] + fields[14]))
	printf -v cpu '%d.%02d' $((ticks / 100)) $((ticks % 100))
fi
printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$step" "$start" "$end" "$cpu" "$status" "$PPID" >>"$KUBEGRAY_TIMINGS"
exit "$status"
