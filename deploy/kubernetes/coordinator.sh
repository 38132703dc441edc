#!/bin/sh
# One night of the storesync fleet, run by the nightly CronJob's pod (cronjob.yaml):
#   1. make this night's worker Job from the storesync-workers template and wait for it to end;
#   2. then make the export Job from the storesync-export template and wait for it to end.
# Exits 0 when both completed, 1 otherwise (the message says which and why), so the
# CronJob's history and any alert on failed Jobs show a bad night.
#
# Safe to run again for the same night: the Job names come from the night (NIGHT, this
# pod's Job name), and a Job that exists already is waited on, never made twice. The
# coordinator's Job retries its pod after an eviction, and a second fleet for the same
# night must not start.
#
# Environment: NIGHT and POD_NAMESPACE (set by cronjob.yaml from the pod's own metadata),
# WORKERS_TEMPLATE, EXPORT_TEMPLATE (the template CronJobs), POLL_SECONDS (between two
# looks at a Job), KUBECTL (the kubectl to call; .ci/validate-manifests passes a stub).
set -eu

: "${NIGHT:?NIGHT must name this night (cronjob.yaml sets it from the batch.kubernetes.io/job-name label)}"
: "${POD_NAMESPACE:?POD_NAMESPACE must name the namespace (cronjob.yaml sets it from metadata.namespace)}"
WORKERS_TEMPLATE=${WORKERS_TEMPLATE:-storesync-workers}
EXPORT_TEMPLATE=${EXPORT_TEMPLATE:-storesync-export}
POLL_SECONDS=${POLL_SECONDS:-30}
KUBECTL=${KUBECTL:-kubectl}
# Consecutive failed looks at a Job (API server unreachable, Job deleted) before giving up.
MAX_LOOK_FAILURES=${MAX_LOOK_FAILURES:-10}

log() {
  printf '%s storesync-coordinator %s: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$NIGHT" "$*" >&2
}

k() {
  "$KUBECTL" --namespace "$POD_NAMESPACE" "$@"
}

# start JOB TEMPLATE: make Job JOB from CronJob TEMPLATE unless JOB exists.
start() {
  if k get job "$1" -o name >/dev/null 2>&1; then
    log "job $1 exists already (this coordinator was restarted): waiting on it, not starting another"
    return 0
  fi
  if ! k create job "$1" --from="cronjob/$2" >/dev/null; then
    # Another coordinator pod of the same night may have made it in between.
    if k get job "$1" -o name >/dev/null 2>&1; then
      log "job $1 appeared while this coordinator made it: waiting on it"
      return 0
    fi
    log "could not create job $1 from cronjob/$2 (is the template applied, and may the ServiceAccount storesync-coordinator get it?)"
    exit 1
  fi
  log "started job $1 from cronjob/$2"
}

# wait_for JOB: print Complete or Failed once JOB has ended.
# Not `kubectl wait`: it waits for one condition only, so a Failed Job would hold the
# coordinator until its own deadline instead of moving on to the export.
wait_for() {
  failures=0
  while :; do
    if conditions=$(k get job "$1" -o 'jsonpath={range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}'); then
      failures=0
      case " $conditions " in
        *" Complete "*) echo Complete; return 0 ;;
        *" Failed "*) echo Failed; return 0 ;;
      esac
    else
      failures=$((failures + 1))
      if [ "$failures" -ge "$MAX_LOOK_FAILURES" ]; then
        log "could not read job $1 $failures times in a row; giving up (it may have been deleted)"
        exit 1
      fi
    fi
    sleep "$POLL_SECONDS"
  done
}

# why JOB: the reason and message of JOB's Failed condition.
why() {
  k get job "$1" -o 'jsonpath={.status.conditions[?(@.type=="Failed")].reason}: {.status.conditions[?(@.type=="Failed")].message}' 2>/dev/null || echo "(no reason readable)"
}

workers_job="$NIGHT-workers"
export_job="$NIGHT-export"

start "$workers_job" "$WORKERS_TEMPLATE"
workers=$(wait_for "$workers_job")
if [ "$workers" = Complete ]; then
  log "job $workers_job completed: every worker index exited 0"
else
  # The export runs anyway: `storesync export` writes from the last finished run in the
  # store, so after a partial or failed night it publishes what the store says is whole
  # (DESIGN.md, Invariant 4: the previous files stay intact if it cannot).
  log "job $workers_job failed ($(why "$workers_job")); exporting what the store holds, then exiting 1"
fi

start "$export_job" "$EXPORT_TEMPLATE"
exported=$(wait_for "$export_job")
if [ "$exported" = Complete ]; then
  log "job $export_job completed"
else
  log "job $export_job failed ($(why "$export_job")); the previous exports are left as they were"
fi

if [ "$workers" = Complete ] && [ "$exported" = Complete ]; then
  log "night done: workers and export completed"
  exit 0
fi
log "night not done: workers $workers, export $exported (kubectl logs job/$workers_job, kubectl logs job/$export_job)"
exit 1
