#!/usr/bin/env python3
"""Summary of replicated / unreplicated runs written by ratio.sh (RAW=file):
each side's medians, the ratio of the medians, the median of the paired
rounds, a 90% bootstrap interval and, with one-member runs (DECOMPOSE=1),
the split into the leader's own path and the followers. Given several files
(several sets) it pools their rounds: a round is (file, round), so
pairs stay within a set.
  engine/bench/ratio_summary.py RAW [RAW...]
"""
import json, random, statistics, sys
runs = {}  # side -> {(file, round): row}
for f, path in enumerate(sys.argv[1:]):
    for l in open(path):
        rnd, side, line = l.split(" ", 2)
        runs.setdefault(side, {})[(f, int(rnd))] = json.loads(line)
def med(side, k): return statistics.median(r[k] for r in runs[side].values())
def round_ratios(a, b):
    # Each round's b run against its a run (adjacent in time).
    return [runs[b][i]["throughput_tps"] / runs[a][i]["throughput_tps"] for i in runs[a] if i in runs[b]]
def paired(a, b):
    # The median of the rounds' ratios follows the machine's slow swings less
    # than the ratio of the medians.
    return statistics.median(round_ratios(a, b))
w = next(iter(runs["u"].values()))
# steal_ms: what the hypervisor took from the workers' CPUs (max over runs).
def steal(side): return max(r.get("steal_ms", -1) for r in runs[side].values())
names = {"u": "1", "r1": "1 (repl.)", "r3": "3"}
# other_us/txn: the busy time of the CPUs the worker does not use, per
# transaction (with three members: the followers and the replication threads).
def med_or_none(side, k): return med(side, k) if all(k in r for r in runs[side].values()) else -1  # older files lack some
def other(side): return med_or_none(side, "other_cpus_us_per_txn")
# runq_ms: how long the worker was ready to run while another thread had its
# CPU (with three members on two vCPUs, whatever the busy followers' CPU
# pushes over to the worker's: docs/benchmarks.md, "What is measured").
def runq(side): return med_or_none(side, "worker_runqueue_ms")
print("%-10s %7s %14s %18s %9s %9s %9s %9s %13s %8s" % ("replicas", "runs", "median_tps", "median_cpu_norm", "p50_us",
                                                        "p95_us", "p99_us", "steal_ms", "other_us/txn", "runq_ms"))
for side in [s for s in ("u", "r1", "r3") if s in runs]:
    print("%-10s %7d %14.0f %18.0f %9.1f %9.1f %9.1f %9.0f %13.2f %8.1f" % (names[side], len(runs[side]),
          med(side, "throughput_tps"), med(side, "cpu_normalized_tps"), med(side, "p50_us"), med(side, "p95_us"),
          med(side, "p99_us"), steal(side), other(side), runq(side)))
t1, t3 = med("u", "throughput_tps"), med("r3", "throughput_tps")
c1, c3 = med("u", "cpu_normalized_tps"), med("r3", "cpu_normalized_tps")
print("ratio replicated/unreplicated: throughput %.3f  cpu-normalized %.3f  (median of the %d paired rounds: %.3f)"
      % (t3 / t1, c3 / c1, len(runs["r3"]), paired("u", "r3")))
def interval(a, b, k="throughput_tps", draws=2000):
    # 90% bootstrap interval of the ratio of medians: rounds drawn with
    # replacement (a round's two runs stay together), fixed seed. It says how
    # far another set on the same machine might land, noise included.
    rounds = [i for i in runs[a] if i in runs[b]]
    rng, got = random.Random(1), []
    for _ in range(draws):
        pick = [rng.choice(rounds) for _ in rounds]
        got.append(statistics.median(runs[b][i][k] for i in pick) / statistics.median(runs[a][i][k] for i in pick))
    got.sort()
    return got[int(0.05 * draws)], got[int(0.95 * draws) - 1]
lo, hi = interval("u", "r3")
print("  90%% bootstrap interval of the ratio over the rounds: %.3f .. %.3f" % (lo, hi))
paired_ratios = round_ratios("u", "r3")
at_target = sum(r >= 0.90 for r in paired_ratios)
print("  paired rounds at or above 0.90: %d of %d" % (at_target, len(paired_ratios)))
summary = {"benchmark": "replication_ratio", "sets": len(sys.argv) - 1, "workload": w["workload"], "threads": w["threads"], "rounds": len(runs["u"]),
           "unreplicated_tps": t1, "replicated_tps": t3, "ratio": round(t3 / t1, 4),
           "ratio_cpu_normalized": round(c3 / c1, 4), "ratio_paired_median": round(paired("u", "r3"), 4),
           "replicated_p50_us": med("r3", "p50_us"), "replicated_p95_us": med("r3", "p95_us"),
           "replicated_p99_us": med("r3", "p99_us"), "max_steal_ms": max(steal(s) for s in runs),
           "ratio_ci90_low": round(lo, 4), "ratio_ci90_high": round(hi, 4),
           "paired_share_at_090": round(at_target / len(paired_ratios), 3),
           "replicated_other_cpus_us_per_txn": round(other("r3"), 2),
           "unreplicated_worker_runqueue_ms": round(runq("u"), 1), "replicated_worker_runqueue_ms": round(runq("r3"), 1)}
if "r1" in runs:
    own, followers = med("r1", "throughput_tps") / t1, t3 / med("r1", "throughput_tps")
    print("  the leader's own path (one member / unreplicated): %.3f (paired %.3f); the followers (three / one member): %.3f (paired %.3f)"
          % (own, paired("u", "r1"), followers, paired("r1", "r3")))
    summary.update({"one_member_tps": med("r1", "throughput_tps"), "ratio_own_path": round(own, 4),
                    "ratio_followers": round(followers, 4)})
print(json.dumps(summary))
