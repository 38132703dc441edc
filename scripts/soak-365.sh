#!/usr/bin/env bash
# A year of nights: runs the demo job (a copy of jobs/demo.yml in a temporary
# folder, against the embedded simulator) night after night, twice: as shipped
# (every run's history kept) and with `retention: {days: 30}`. At the report
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

# pass LABEL RETENTION_DAYS_OR_EMPTY: runs the nights, writes its table to $WORK/LABEL.table.
pass() {
    local label=$1 retention=$2
    local dir="$WORK/$label"
    mkdir -p "$dir"
    sed -e 's|^store: .*|store: store/snapshot.sqlite|' -e 's|^output: .*|output: out|' "$ROOT/jobs/demo.yml" > "$dir/demo.yml"
    if [ -n "$retention" ]; then printf '\n# Added by soak-365.sh.\nretention: {days: %s}\n' "$retention" >> "$dir/demo.yml"; fi
    "$STORESYNC" validate "$dir/demo.yml" >/dev/null

    local store="$dir/store/snapshot.sqlite" table="$WORK/$label.table"
    local times=() failed=0 first_failure=""
    printf '%-6s %-5s %14s %16s %6s %12s %16s\n' night exit "snapshot bytes" "change-log rows" runs "night (s)" "mean of 10 (s)" > "$table"
    for night in $(seq 1 "$NIGHTS"); do
        local start end rc=0
        start=$(date +%s.%N)
        "$STORESYNC" run "$dir/demo.yml" > "$dir/night.log" 2>&1 || rc=$?
        end=$(date +%s.%N)
        local seconds
        seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
        times+=("$seconds")
        if [ "$rc" -ne 0 ]; then
            failed=$((failed + 1))
            if [ -z "$first_failure" ]; then
                first_failure=$night
                cp "$dir/night.log" "$WORK/$label.first-failure.log"
            fi
        fi
        if [ $((night % 30)) -eq 0 ]; then echo "$label: night $night ($seconds s, exit $rc)" >&2; fi
        for at in $REPORT_AT; do
            [ "$at" -eq "$night" ] || continue
            local bytes rows runs mean
            bytes=$(( $(stat -c %s "$store") + $( [ -f "$store-wal" ] && stat -c %s "$store-wal" || echo 0) ))
            rows=$(sqlite3 -readonly "$store" "SELECT count(*) FROM changes")
            runs=$(sqlite3 -readonly "$store" "SELECT count(*) FROM runs")
            local from=$(( ${#times[@]} > 10 ? ${#times[@]} - 10 : 0 ))
            mean=$(printf '%s\n' "${times[@]:from}" | awk '{ s += $1; n++ } END { printf "%.2f", s / n }')
            printf '%-6s %-5s %14s %16s %6s %12s %16s\n' "$night" "$rc" "$bytes" "$rows" "$runs" "$seconds" "$mean" >> "$table"
        done
    done
    {
        echo "nights that did not exit 0: $failed of $NIGHTS${first_failure:+ (first: night $first_failure)}"
        if [ -n "$retention" ]; then
            grep -h '^retention:' "$dir/night.log" | sed 's/^/last night: /' || true
        fi
    } >> "$table"
}

pass kept-all ""
pass "retention-${RETENTION_DAYS}d" "$RETENTION_DAYS"

echo
echo "== demo job, $NIGHTS nights, every run's history kept =="
cat "$WORK/kept-all.table"
echo
echo "== demo job, $NIGHTS nights, retention: {days: $RETENTION_DAYS} =="
cat "$WORK/retention-${RETENTION_DAYS}d.table"
if [ -n "${KEEP:-}" ]; then
    for f in "$WORK"/*.first-failure.log; do [ -f "$f" ] && echo && echo "first failing night ($f):" && tail -20 "$f"; done
fi
