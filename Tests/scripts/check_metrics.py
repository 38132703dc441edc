#!/usr/bin/env python3
"""Parses a storesync metrics file with Prometheus's own text-format parser.

Usage: check_metrics.py FILE. Prints one line per sample (name, labels,
value) and exits 1 if the parser refuses the file or a sample carries a
`job` label (which Prometheus's target label would rename to exported_job).
"""
import sys

from prometheus_client.parser import text_string_to_metric_families


def main() -> int:
    text = open(sys.argv[1], encoding="utf-8").read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as error:  # the parser raises ValueError and friends
        print(f"parse error: {error}")
        return 1
    status = 0
    for family in families:
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            print(f"{sample.name} {{{labels}}} {sample.value}")
            if "job" in sample.labels:
                print(f"label clash: {sample.name} has a 'job' label")
                status = 1
    print(f"families: {len(families)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
