#!/usr/bin/env python3
"""Warns when the closed-loop runs in a file of rolis-bench JSON lines did not
have their CPUs: each worker of a closed-loop run should be on its CPU for the
whole window, so worker_cpu_seconds well under threads x seconds means
another process took it (a Kind cluster left by the e2e suite, a build), and
the set measures that process as much as the code, unless the replicated
workers waited on flow control (flow_control_wait_ms says how long).

  busy_machine.py FILE   # lines: anything, then the JSON object
"""
import json
import sys

SHARE = 0.95  # of threads x seconds


def main(path):
    short, runs = [], 0
    for line in open(path):
        if "{" not in line:
            continue
        r = json.loads(line[line.index("{"):])
        if r.get("rate_tps"):
            continue  # open loop: the workers wait for their due times
        runs += 1
        want = r["threads"] * r["seconds"]
        waited = r.get("flow_control_wait_ms", 0) / 1000.0
        if want > 0 and r["worker_cpu_seconds"] + waited < SHARE * want:
            short.append(r["worker_cpu_seconds"] / want)
    if short:
        print("warning: in %d of %d runs the workers had their CPUs for only %s of the window: another process "
              "was running (a Kind cluster from the e2e suite? hack/kind/down.sh --all); these figures measure it too"
              % (len(short), runs, ", ".join("%.0f%%" % (100 * s) for s in short)))


if __name__ == "__main__":
    main(sys.argv[1])
