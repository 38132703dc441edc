#!/usr/bin/env bash
# A year of nights: runs the demo job (a copy of jobs/demo.yml in a temporary
# folder, against the embedded simulator) night after night, twice over: as
# shipped (every run's history kept) and with `retention: {days: 30}`. At the report
# nights it prints the snapshot's size on disk, its change-log rows and runs,
# and the night's wall time (the whole `storesync run` process), beside the
# mean of the ten nights up to it: history must not make a night slower.
#
# usage: scripts/soak-365.sh [NIGHTS]          (default 365)
# environment:
#   STORESYNC=path/to/storesync   use this binary (default: swift build -c release)
#   REPORT_AT="1 30 90 365"       the nights printed (those beyond NIGHTS are skipped)
#   RETENTION_DAYS=30             the second pass's retention
#   KEEP=1                        keep the temporary folder (stores, exports, logs)
#
# Needs sqlite3 (the command-line shell) to count the store's rows.
set -euo pipefail

NIGHTS=${1:-365}
REPORT_AT=${REPORT_AT:-"1 30 90 365"}
RETENTION_DAYS=${RETENTION_DAYS:-30}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${STORESYNC:-}" ]; then
    echo "building storesync (release)…" >&2
    (cd "$ROOT" && swift build -c release --product storesync >&2)
    STORESYNC="$ROOT/.build/release/storesync"
fi
command -v sqlite3 >/dev/null || { echo "soak-365.sh needs the sqlite3 command-line shell" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/storesync-soak-365.XXXXXX")
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$WORK"' EXIT; else echo "keeping $WORK" >&2; fi

# Both passes crawl the same nights in lockstep (night N of one, then of the
# other), so whatever else the machine does slows both alike: their wall
# times compare fairly even on a busy machine.
LABELS=(kept-all "retention-${RETENTION_DAYS}d")
RETENTIONS=("" "$RETENTION_DAYS")

# setup LABEL RETENTION_DAYS_OR_EMPTY: the job copy and the table's header.
setup() {
    local label=$1 retention=$2 dir="$WORK/$1"
    mkdir -p "$dir"
    sed -e 's|^store: .*|store: store/snapshot.sqlite|' -e 's|^output: .*|output: out|' "$ROOT/jobs/demo.yml" > "$dir/demo.yml"
    if [ -n "$retention" ]; then printf '\n# Added by soak-365.sh.\nretention: {days: %s}\n' "$retention" >> "$dir/demo.yml"; fi
    "$STORESYNC" validate "$dir/demo.yml" >/dev/null
    printf '%-6s %-5s %14s %16s %6s %12s %16s\n' night exit "snapshot bytes" "change-log rows" runs "night (s)" "mean of 10 (s)" \
        > "$WORK/$label.table"
    : > "$WORK/$label.times"
    echo 0 > "$WORK/$label.failed"
}

# night LABEL N: runs night N of that pass and, at a report night, adds its row.
night() {
    local label=$1 night=$2 dir="$WORK/$1"
    local store="$dir/store/snapshot.sqlite" start end rc=0 seconds
    start=$(date +%s.%N)
    "$STORESYNC" run "$dir/demo.yml" > "$dir/night.log" 2>&1 || rc=$?
    end=$(date +%s.%N)
    seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    echo "$seconds" >> "$WORK/$label.times"
    if [ "$rc" -ne 0 ]; then
        echo $(( $(cat "$WORK/$label.failed") + 1 )) > "$WORK/$label.failed"
        [ -f "$WORK/$label.first-failure.log" ] || { cp "$dir/night.log" "$WORK/$label.first-failure.log"; echo "$night" > "$WORK/$label.first-failure"; }
    fi
    if [ $((night % 30)) -eq 0 ]; then echo "$label: night $night ($seconds s, exit $rc)" >&2; fi
    for at in $REPORT_AT; do
        [ "$at" -eq "$night" ] || continue
        local bytes rows runs mean
        bytes=$(( $(stat -c %s "$store") + $( [ -f "$store-wal" ] && stat -c %s "$store-wal" || echo 0) ))
        rows=$(sqlite3 -readonly "$store" "SELECT count(*) FROM changes")
        runs=$(sqlite3 -readonly "$store" "SELECT count(*) FROM runs")
        mean=$(tail -n 10 "$WORK/$label.times" | awk '{ s += $1; n++ } END { printf "%.2f", s / n }')
        printf '%-6s %-5s %14s %16s %6s %12s %16s\n' "$night" "$rc" "$bytes" "$rows" "$runs" "$seconds" "$mean" >> "$WORK/$label.table"
    done
}

for i in "${!LABELS[@]}"; do setup "${LABELS[$i]}" "${RETENTIONS[$i]}"; done
for n in $(seq 1 "$NIGHTS"); do
    for label in "${LABELS[@]}"; do night "$label" "$n"; done
done

for i in "${!LABELS[@]}"; do
    label=${LABELS[$i]} retention=${RETENTIONS[$i]}
    echo
    if [ -n "$retention" ]; then
        echo "== demo job, $NIGHTS nights, retention: {days: $retention} =="
    else
        echo "== demo job, $NIGHTS nights, every run's history kept =="
    fi
    cat "$WORK/$label.table"
    first=$( [ -f "$WORK/$label.first-failure" ] && echo " (first: night $(cat "$WORK/$label.first-failure"))" || true)
    echo "nights that did not exit 0: $(cat "$WORK/$label.failed") of $NIGHTS$first"
    [ -n "$retention" ] && grep -h '^retention:' "$WORK/$label/night.log" | sed 's/^/last night: /' || true
    if [ -n "${KEEP:-}" ] && [ -f "$WORK/$label.first-failure.log" ]; then
        echo "first failing night's summary (tail):"
        tail -n 12 "$WORK/$label.first-failure.log"
    fi
done
