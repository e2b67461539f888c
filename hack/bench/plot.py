#!/usr/bin/python3
"""Draws the suite's plots from the JSON lines hack/bench/run.sh wrote.

    python3 hack/bench/plot.py [DIR]      DIR: build/bench by default

Reads DIR/{suite,mix,threads,batch,zipf,replay,correctness}.jsonl (each line one
rolis-bench or rolis-replay-bench JSON object; a missing file skips its
plot) and writes into DIR:
  threads.png   throughput against worker threads, every mode (YCSB++)
  latency.png   client-visible commit latency p50/p95/p99 against batch size (rolis)
  zipf.png      throughput and abort rate against zipf theta, rolis and silo
  replay.png    a follower's replay-only throughput against silo's
  summary.md    a table of every mode x workload, the YCSB++ ratios, and the
                kill-a-follower runs' checks
Needs Debian's python3-matplotlib (apt-get install -y python3-matplotlib).
"""
import json
import os
import sys

try:
    import matplotlib
except ImportError:
    sys.exit("plot.py: needs matplotlib: apt-get install -y python3-matplotlib")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MODES = ["silo", "rolis", "2pl", "calvin"]


def load(d, name):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def system(r):
    # Lines from before the "system" field: mode unreplicated/replicated.
    return r.get("system") or {"unreplicated": "silo", "replicated": "rolis"}.get(r.get("mode"), r.get("mode"))


def plot_threads(d, rows):
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in MODES:
        pts = sorted((r["threads"], r["throughput_tps"]) for r in rows if system(r) == m)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=m)
    ax.set_xlabel("worker threads")
    ax.set_ylabel("throughput (txn/s)")
    ax.set_yscale("log")
    ax.set_xticks(sorted({r["threads"] for r in rows}))
    ax.set_title("YCSB++: throughput against threads")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "threads.png"), dpi=120)
    plt.close(fig)


def plot_latency(d, rows):
    if not rows:
        return
    rows = sorted(rows, key=lambda r: r["batch_size"])
    xs = [r["batch_size"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for q in ("p50_us", "p95_us", "p99_us"):
        ax.plot(xs, [r[q] / 1000 for r in rows], marker="o", label=q.split("_")[0])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch size (transactions)")
    ax.set_ylabel("client-visible commit latency (ms)")
    ax.set_title("rolis, YCSB++: latency against batch size")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "latency.png"), dpi=120)
    plt.close(fig)


def theta(r):
    return float(dict(r.get("config", {})).get("zipf", 0))


def plot_zipf(d, rows):
    if not rows:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for m in ("silo", "rolis"):
        pts = sorted((theta(r), r["throughput_tps"], r["abort_rate"]) for r in rows if system(r) == m)
        if pts:
            a1.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=m)
            a2.plot([p[0] for p in pts], [100 * p[2] for p in pts], marker="o", label=m)
    a1.set_xlabel("zipf theta")
    a1.set_ylabel("throughput (txn/s)")
    a2.set_xlabel("zipf theta")
    a2.set_ylabel("abort rate (%)")
    a1.set_title("YCSB++ under skew: throughput")
    a2.set_title("abort rate")
    for a in (a1, a2):
        a.legend()
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "zipf.png"), dpi=120)
    plt.close(fig)


def plot_replay(d, replay, suite):
    silo = [r for r in suite if system(r) == "silo" and r["workload"] == "ycsbpp" and r["threads"] == 1]
    if not replay or not silo:
        return
    r = replay[0]
    replay_tps = r["txns"] / r["seconds"] if r["seconds"] > 0 else 0
    # silo's YCSB++ is half read-only: its read-write transactions per second too.
    rw = silo[0]["txns"].get("ReadModifyWrite", {}).get("commits", 0) / silo[0]["seconds"]
    fig, ax = plt.subplots(figsize=(6, 4))
    bars = ["replay only\n(1 thread)", "silo, all txns\n(1 thread)", "silo, read-write\n(1 thread)"]
    vals = [replay_tps, silo[0]["throughput_tps"], rw]
    ax.bar(bars, vals, color=["tab:green", "tab:blue", "tab:cyan"])
    for i, v in enumerate(vals):
        ax.text(i, v, f"{v:,.0f}", ha="center", va="bottom")
    ax.set_ylabel("transactions per second")
    ax.set_title("YCSB++: a follower's replay against silo")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "replay.png"), dpi=120)
    plt.close(fig)


def summary(d, suite, mix, correctness):
    lines = ["| mode | workload | threads | txn/s | per thread | abort rate | p50 us | p99 us | check |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in suite + mix:
        cfg = dict(r.get("config", {}))
        w = r["workload"] + (f" {cfg['read_only_percent']}% RO" if "read_only_percent" in cfg else "")
        lines.append(f"| {system(r)} | {w} | {r['threads']} | {r['throughput_tps']:,.0f} | "
                     f"{r.get('per_thread_tps', 0):,.0f} | {100 * r['abort_rate']:.2f}% | {r['p50_us']:.0f} | "
                     f"{r['p99_us']:.0f} | {r.get('check', '')} |")
    y = {system(r): r["throughput_tps"] for r in suite if r["workload"] == "ycsbpp" and r["threads"] == 1}
    if "rolis" in y:
        lines.append("")
        lines.append("YCSB++, 1 thread: " + ", ".join(
            f"rolis / {m} = {y['rolis'] / y[m]:.2f}" for m in ("silo", "calvin", "2pl") if y.get(m)))
    if correctness:
        lines.append("")
        lines.append("| mode | workload | follower killed | acknowledged on a majority | workload check |")
        lines.append("|---|---|---|---|---|")
        for r in correctness:
            lines.append(f"| {system(r)} | {r['workload']} | {r.get('killed_follower', 'none')} | "
                         f"{r.get('acked_check', '')} | {r.get('check', '')} |")
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    suite = load(d, "suite.jsonl")
    plot_threads(d, load(d, "threads.jsonl"))
    plot_latency(d, load(d, "batch.jsonl"))
    plot_zipf(d, load(d, "zipf.jsonl"))
    plot_replay(d, load(d, "replay.jsonl"), suite)
    summary(d, suite, load(d, "mix.jsonl"), load(d, "correctness.jsonl"))


if __name__ == "__main__":
    main()
