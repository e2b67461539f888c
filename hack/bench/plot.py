#!/usr/bin/python3
"""Draws the suite's plots from the JSON lines hack/bench/run.sh wrote.

    python3 hack/bench/plot.py [DIR]      DIR: build/bench by default

Reads DIR/{suite,mix,threads,batch,zipf,replay,correctness}.jsonl (each
line one rolis-bench or rolis-replay-bench JSON object), DIR/failover.jsonl
and DIR/failover-kind.jsonl (rolisctl bench --timeline lines with the
leader's kill: kill_at_s, or kill_unix on rolisctl's clock) and
DIR/rtt.jsonl (rolisctl bench lines with rtt_ms, the round trip injected
between nodes); a missing file skips its plot. Writes into DIR:
  threads.png   throughput against worker threads, every mode (YCSB++)
  latency.png   client-visible commit latency p50/p95/p99 against batch size (rolis)
  zipf.png      throughput and abort rate against zipf theta, rolis and silo
  replay.png    a follower's replay-only throughput against silo's
  failover.png, failover-kind.png
                throughput and failures per timeline bucket, the kill marked
  rtt.png       commit latency p50/p99 and throughput against injected RTT
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


def kill_at(r):
    """Seconds from the timeline's start to the leader's kill, or None."""
    if "kill_at_s" in r:
        return float(r["kill_at_s"])
    if "kill_unix" in r and "timeline_start_unix" in r:
        return float(r["kill_unix"]) - float(r["timeline_start_unix"])
    return None


def plot_failover(d, rows, name):
    """Figure 3: one panel per run, committed and failed transactions per
    second in each bucket, the commits' p99 on the right axis, the kill as
    a vertical line (on Kind, the operator's detection and the new leader's
    open too)."""
    rows = [r for r in rows if r.get("timeline")]
    if not rows:
        return
    fig, axes = plt.subplots(len(rows), 1, figsize=(9, 3.2 * len(rows)), squeeze=False)
    for ax, r in zip(axes[:, 0], rows):
        w = float(r.get("timeline_bucket_s", 0.1))
        tl = r["timeline"]
        ts = [b["t"] for b in tl]
        # Stacked: committed, then aborted, then failed.
        bottom = [0.0] * len(tl)
        for key, color in (("committed", "tab:blue"), ("aborted", "tab:orange"), ("failed", "tab:red")):
            v = [b.get(key, 0) / w for b in tl]
            if key == "committed" or any(v):
                ax.bar(ts, v, width=w, align="edge", bottom=bottom, color=color, label=key)
                bottom = [x + y for x, y in zip(bottom, v)]
        ax.set_xlabel("seconds from the start of the run")
        ax.set_ylabel("transactions per second")
        k = kill_at(r)
        if k is not None:
            ax.axvline(k, color="black", linestyle="--", label="leader killed")
            # On Kind: the operator's events after the kill (hack/bench/kind.sh).
            for key, style, label in (("detected_after_s", ":", "operator detected it"),
                                      ("promoted_after_s", "-.", "new leader open")):
                if r.get(key) is not None:
                    ax.axvline(k + float(r[key]), color="dimgray", linestyle=style, label=label)
        lat = ax.twinx()
        # No commit in a bucket: a gap in the line, not a slope across it.
        lat.plot([b["t"] + w / 2 for b in tl], [b["p99_us"] / 1000 if b.get("p99_us") else float("nan") for b in tl],
                 color="black", linewidth=0.8, alpha=0.6, label="p99 of commits")
        lat.set_ylabel("p99 commit latency (ms)")
        lat.set_ylim(bottom=0)
        where = r.get("where", "kind" if "kind" in name else "")
        title = f"{r.get('workload', '')}, {where}".strip(", ")
        if r.get("election"):
            title += f", election: {r['election']}"
        if k is not None:
            title += f"; killed at {k:.2f} s"
        ax.set_title(title)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = lat.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="upper right", fontsize="small", framealpha=0.9)
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"Failover timeline ({1000 * float(rows[0].get('timeline_bucket_s', 0.1)):.0f} ms buckets)")
    fig.tight_layout()
    fig.savefig(os.path.join(d, name), dpi=120)
    plt.close(fig)


def plot_rtt(d, rows):
    """Figure 6: p50/p99 commit latency and throughput against the injected
    round trip, one series per label (several runs at one RTT: their median)."""
    rows = [r for r in rows if "rtt_ms" in r]
    if not rows:
        return
    labels = sorted({r.get("label", "") for r in rows})
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for lab in labels:
        by = {}
        for r in rows:
            if r.get("label", "") == lab:
                by.setdefault(float(r["rtt_ms"]), []).append(r)
        xs = sorted(by)

        def med(key, xs=xs, by=by):
            out = []
            for x in xs:
                v = sorted(r[key] for r in by[x])
                out.append(v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2)
            return out
        pre = f"{lab} " if lab else ""
        a1.plot(xs, [v / 1000 for v in med("p50_us")], marker="o", label=pre + "p50")
        a1.plot(xs, [v / 1000 for v in med("p99_us")], marker="s", label=pre + "p99")
        a2.plot(xs, med("throughput_tps"), marker="o", label=lab or "throughput")
    a1.set_xlabel("injected round trip between nodes (ms)")
    a1.set_ylabel("commit latency (ms)")
    a1.set_title("commit latency against RTT")
    a2.set_xlabel("injected round trip between nodes (ms)")
    a2.set_ylabel("throughput (txn/s)")
    a2.set_title("throughput against RTT")
    for a in (a1, a2):
        a.set_ylim(bottom=0)
        a.legend()
        a.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "rtt.png"), dpi=120)
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
    plot_failover(d, load(d, "failover.jsonl"), "failover.png")
    plot_failover(d, load(d, "failover-kind.jsonl"), "failover-kind.png")
    plot_rtt(d, load(d, "rtt.jsonl"))
    summary(d, suite, load(d, "mix.jsonl"), load(d, "correctness.jsonl"))


if __name__ == "__main__":
    main()
