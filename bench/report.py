#!/usr/bin/env python3
"""Helpers of bench/run.sh.

  report.py pgbench WARMUP_S warm|cold LOG_PREFIX...   steady-state numbers of a pgbench point (JSON line)
  report.py cpu OUT.json AFTER_S NAME=PID[:main]... -- COMMAND...
                                                CPU time of process trees (or a main thread) while COMMAND runs
  report.py e2e ROUND.txt...                    one end-to-end point from its wrk rounds (JSON line)
  report.py render RESULTS.jsonl META.json OUT  writes bench/RESULTS.md (never edit that by hand)
"""
import glob
import json
import os
import re
import subprocess
import sys
import time


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(p / 100 * len(values) + 0.5) - 1))
    return values[k]


TICK = os.sysconf("SC_CLK_TCK")


def proc_table():
    """{pid: (ppid, own ticks, waited-for children's ticks)} of every process (/proc/PID/stat
    utime+stime and cutime+cstime)."""
    table = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                s = fh.read()
        except OSError:
            continue
        x = s[s.rindex(")") + 2:].split()
        table[int(d)] = (int(x[1]), int(x[11]) + int(x[12]), int(x[13]) + int(x[14]))
    return table


def thread_ticks(pid):
    """CPU ticks of one process's main thread alone (/proc/PID/task/PID: in Deno, where JavaScript
    runs; the rest of the process is Rust threads, e.g. the OpenTelemetry exporter's)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/stat") as fh:
            s = fh.read()
    except OSError:
        return 0
    x = s[s.rindex(")") + 2:].split()
    return int(x[11]) + int(x[12])


def ticks(table, spec):
    """NAME=PID: the process tree's ticks; NAME=PID:main: its main thread's."""
    return thread_ticks(int(spec[:-5])) if spec.endswith(":main") else tree_ticks(table, int(spec))


def tree_ticks(table, root):
    """CPU ticks of ROOT and its descendants: each live process's own time plus what it collected
    from the children it reaped (a backend that exited is in the postmaster's cutime), so a
    process that starts or ends inside the window is counted once."""
    kids = {}
    for pid, (ppid, _, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            total += table[pid][1] + table[pid][2]
            todo += kids.get(pid, [])
    return total


def cpu(out, after, *args):
    """Run COMMAND; from AFTER seconds after its start to its end, the CPU seconds of each named
    process tree (NAME=PID) and of COMMAND itself (load). Writes {t0, t1, cpu_s: {...}}."""
    sep = args.index("--")
    groups = dict(a.split("=", 1) for a in args[:sep])
    cmd = args[sep + 1:]
    child = subprocess.Popen(cmd)
    time.sleep(float(after))  # the warm-up the caller excludes (pgbench -l tells what fell after)
    t0, table = time.time(), proc_table()
    start = {n: ticks(table, p) for n, p in groups.items()}
    load0 = table.get(child.pid, (0, 0, 0))[1]
    _, status, usage = os.wait4(child.pid, 0)
    t1, table = time.time(), proc_table()
    cpu_s = {n: (ticks(table, p) - start[n]) / TICK for n, p in groups.items()}
    cpu_s["load"] = usage.ru_utime + usage.ru_stime - load0 / TICK
    json.dump({"t0": t0, "t1": t1, "cpu_s": cpu_s}, open(out, "w"))
    sys.exit(os.waitstatus_to_exitcode(status))


def pgbench_round(prefix, warmup, mode):
    """One pgbench run. pgbench -l lines: client_id transaction_no latency_us script_no epoch_s
    epoch_us. The window starts WARMUP seconds after the run started and, in mode "warm", not
    before every client has finished its first transaction (every backend has answered once, so
    caches are warm); it ends with the last completion. Mode "cold" (every transaction cold by
    design, the DDL scenarios) only skips the WARMUP seconds. Returns (latencies ms, window s,
    failed)."""
    rows, failed = [], 0  # (client, completion time s, latency ms)
    for path in glob.glob(prefix + ".[0-9]*"):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6:
                    continue
                if not parts[2].isdigit():
                    failed += 1
                    continue
                rows.append((int(parts[0]), int(parts[4]) + int(parts[5]) / 1e6, int(parts[2]) / 1000.0))
    out = open(prefix + ".out").read()
    m = re.search(r"number of failed transactions: (\d+)", out)
    failed += int(m.group(1)) if m else 0
    if not rows:
        return [], 0.0, failed
    first = {}
    for client, t, _ in rows:
        first[client] = min(first.get(client, t), t)
    t_min = min(t - l / 1000 for _, t, l in rows)  # when the first transaction started
    start = t_min + warmup
    if mode == "warm":
        start = max(start, max(first.values()))
    end = max(t for _, t, _ in rows)
    cpu_s, cpu_n = {}, 0
    if os.path.exists(prefix + ".cpu.json"):
        c = json.load(open(prefix + ".cpu.json"))
        cpu_s = c["cpu_s"]
        cpu_n = sum(1 for _, t, _ in rows if c["t0"] < t <= c["t1"])
    return [l for _, t, l in rows if start < t <= end], max(0.0, end - start), failed, cpu_s, cpu_n


def pgbench(warmup, mode, *prefixes):
    """Steady-state numbers of a point measured in one or more rounds (interleaved with the
    point it is compared with): transactions and seconds summed over the rounds."""
    lat, window, failed, cpu_s, cpu_n, round_tps = [], 0.0, 0, {}, 0, []
    for prefix in prefixes:
        l, w, f, cs, cn = pgbench_round(prefix, warmup, mode)
        round_tps.append(len(l) / w if w > 0 else 0)
        lat += l
        window += w
        failed += f
        for k, v in cs.items():
            cpu_s[k] = cpu_s.get(k, 0) + v
        cpu_n += cn
    return {
        "cpu_us": {k: v / cpu_n * 1e6 for k, v in cpu_s.items()} if cpu_n else {},
        "tps": len(lat) / window if window > 0 else 0,
        "avg_ms": sum(lat) / len(lat) if lat else None,
        "p50_ms": pct(lat, 50) if lat else None,
        "p99_ms": pct(lat, 99) if lat else None,
        "n": len(lat),
        "window_s": round(window, 2),
        "rounds": len(prefixes),
        "round_tps": round_tps,
        "failed": failed,
    }


def f(x, digits=0):
    if x is None or x != x:
        return "–"
    return f"{x:,.{digits}f}"


def ratio(a, b, digits=2):
    if not a or not b or a != a or b != b:
        return "–"
    return f"{a / b:.{digits}f}×"


def render(results_path, meta_path, out_path):
    recs = [json.loads(l) for l in open(results_path) if l.strip()]
    meta = json.load(open(meta_path))
    setup = next((r for r in recs if r["kind"] == "setup"), {})
    pgb = {(r["name"], r["c"]): r for r in recs if r["kind"] == "pgbench"}
    e2e = {(r["server"], r["c"]): r for r in recs if r["kind"] == "e2e"}
    mem = {r["db"]: r for r in recs if r["kind"] == "memory"}
    perf = [r for r in recs if r["kind"] == "perf"]
    verify = next((r for r in recs if r["kind"] == "verify"), None)
    badsamples = [r for r in recs if r["kind"] == "badsample"]
    clients = sorted({c for _, c in pgb} | {c for _, c in e2e})
    L = []
    w = L.append

    w("# Benchmark results")
    w("")
    w("Generated by `make bench` (`bench/run.sh`, rendered by `bench/report.py`); do not edit by hand,")
    w("run the command again. The machine is shared (2 cores, other work running): absolute numbers")
    w("are noise, the ratios of runs taken back to back are what count.")
    w("")
    if meta["build"].startswith("DEBUG"):
        w("> **The installed chumbo.so is a debug build** (what was installed when this ran). Every chumbo number below")
        w("> carries Rust's debug assertions and unoptimized code; the floor and the reference do not. Run `make install`")
        w("> (release) and `make bench` again before reading the chumbo ratios as the product's.")
        w("")
    w("| | |")
    w("|---|---|")
    w(f"| command | `{meta['command']}` with {meta['env']} |")
    w(f"| date | {meta['started']} → {meta['finished']} ({meta['elapsed']} s) |")
    w(f"| machine | `nproc` {meta['nproc']}, {meta['cpu']}, {meta['mem']} memory, kernel {meta['kernel']}, load average at the end {meta['load']} |")
    w(f"| PostgreSQL | {meta['pg']} |")
    w(f"| chumbo | extension {meta['chumbo']}, chumbo.so sha256 {meta['so']}, repo {meta['commit']} |")
    w(f"| chumbo.so build | {'**' + meta['build'] + '**' if meta['build'].startswith('DEBUG') else meta['build']} |")
    if meta.get("audit_queue"):
        aq = json.loads(meta["audit_queue"])
        w("| audit queue (`shared_preload_libraries = 'chumbo'`) | " + (
            f"rows written by the worker {aq['written']:,}, written in their calls because the queue was full {aq['overflowed']:,} |"
            if aq.get("preloaded") else "not preloaded: every audit row was written in its call |"))
    if meta.get("so_start") and meta["so_start"] != meta["so"]:
        w(f"| **warning** | chumbo.so was replaced during the run (at the start: {meta['so_start']}); backends started before and after ran different builds |")
    w(f"| clients | pgbench 15 (`-M prepared`, login role `chumbo_edge`), {meta['wrk']}, Node {meta['node']}, {meta['deno']}, @modelcontextprotocol/sdk {meta['sdk']} |")
    w("")

    # the issue's table ----------------------------------------------------------------------------
    rp, ro = setup.get("rows_page"), setup.get("rows_one")
    g = lambda n, c=8: pgb.get((n, c))
    delta = lambda r: r["afterAll"]["rssanon_kb"] - r["before"]["rssanon_kb"]
    cache_of = lambda db: ((delta(mem[db]) - delta(mem["chumbo_bench"])) / 1024
                           if db in mem and "chumbo_bench" in mem else None)
    cache_mib, cache10k_mib = cache_of("chumbo_bench_1k"), cache_of("chumbo_bench_10k")
    reg_bytes = lambda db: ((mem.get(db) or {}).get("cacheStats") or {}).get("registry_bytes")

    w("## The goals (issue 32; issue 30's tracing rows)")
    w("")
    w("Each row as the issue defines it, from this run; the sections below hold the details. Ratios are chumbo over the "
      "other side, both measured interleaved in the same run (`BENCH_ROUNDS` rounds; end to end `BENCH_E2E_ROUNDS`). "
      "The fresh-machine time is not "
      "measured by this command: see the analysis at the end.")
    w("")
    w("| what | chumbo | floor / reference | **ratio** | goal | |")
    w("|---|---:|---:|---:|---:|---|")

    def row(what, a, b, unit, goal, ok_fn, digits=0, scale=1, also=None):
        if a is None or b is None or not b:
            w(f"| {what} | {f(a and a * scale, digits)} | {f(b and b * scale, digits)} | – | {goal} | not measured |")
            return
        r = a / b
        ok = ok_fn(r) and (also is None or also[0])
        note = f" ({also[1]})" if also else ""
        w(f"| {what} | {f(a * scale, digits)} {unit} | {f(b * scale, digits)} {unit} | **{r:.2f}×**{note} | {goal} | "
          f"{'met' if ok else '**missed**'} |")

    tps = lambda r: r and r["tps"]
    row(f"tools/call, {f(ro)} row under RLS, `chumbo.handle` vs the like-for-like floor, c=8", tps(g("chumbo_call_one")),
        tps(g("floor_like_call_one")), "TPS", "≥ 0.9×", lambda r: r >= 0.9)
    row("tools/call of a do-nothing tool (`select 1`), same", tps(g("chumbo_call_noop")),
        tps(g("floor_like_call_noop")), "TPS", "≥ 0.75×", lambda r: r >= 0.75)
    row(f"tools/call, {f(rp)} rows, same", tps(g("chumbo_call_page")), tps(g("floor_like_call_page")), "TPS", "≥ 1.3×",
        lambda r: r >= 1.3)
    for c in (8, 32):
        a, raw = e2e.get(("chumbo", c)), g("raw_call_page", c)
        row(f"end to end req/s vs the raw query alone (pgbench, no JSON, no HTTP), c={c}", a and a["rps"], tps(raw),
            "req/s", "≥ 0.45×", lambda r: r >= 0.45)
    for c in (8, 32):
        a, b = e2e.get(("chumbo", c)), e2e.get(("reference", c))
        row(f"end to end (edge + DB) vs the TS SDK reference (SDK + jose + pg), c={c}: req/s", a and a["rps"],
            b and b["rps"], "req/s", "≥ 6×", lambda r: r >= 6)
        # "in every round": the worst round's ratio must meet the goal too
        per = [x / y for x, y in zip((a or {}).get("round_p99_us", []), (b or {}).get("round_p99_us", [])) if y]
        row(f"end to end, c={c}: p99 latency (audit worker on)", a and a["p99_us"], b and b["p99_us"], "ms",
            "≤ 0.2× in every round", lambda r: r <= 0.2, digits=1, scale=1e-3,
            also=(bool(per) and max(per) <= 0.2, "rounds " + ", ".join(f"{x:.2f}×" for x in per)) if per else None)
    for n in (1000, 10000):
        row(f"tools/list first page, {n:,} tools vs 100 (c=8, TPS: 100 over {n:,})", tps(g("list_100")),
            tps(g(f"list_{n}")), "TPS", "≤ 1.2×", lambda r: r <= 1.2)
    mem_ok = None
    if cache10k_mib is not None:
        mem_ok = (cache10k_mib <= 40, f"cache {cache10k_mib:.1f} MiB per backend")
    row("tools/call (1 row) with 10,000 tools vs 100 (c=8, TPS: 100 over 10,000)", tps(g("call_one_100")),
        tps(g("call_one_10000")), "TPS", "≤ 1.1×; cache ≤ 40 MiB", lambda r: r <= 1.1, also=mem_ok)
    row("resources/list and resources/read with 10,000 tools vs 100 (c=8, TPS: 100 over 10,000)",
        tps(g("resources_100")), tps(g("resources_10000")), "TPS", "≤ 1.1×", lambda r: r <= 1.1)
    ddl = [x / y for x, y in zip((g("list_1000_ddl1s") or {}).get("round_tps", []),
                                  (g("list_1000") or {}).get("round_tps", [])) if y]
    row("tools/list while one tool's COMMENT changes every second (1,000 tools, c=8) vs warm",
        tps(g("list_1000_ddl1s")), tps(g("list_1000")), "TPS", "≥ 0.9× in every round", lambda r: r >= 0.9,
        also=(min(ddl) >= 0.9, "rounds " + ", ".join(f"{x:.2f}×" for x in ddl)) if ddl else None)
    trace_ratio = meta.get("trace_ratio")

    def rounds_of(x, y):
        """Each round's req/s ratio, shown beside the run's (the goal is the run's): the band the
        rounds spread over is the measurement's noise."""
        per = [p / q for p, q in zip((x or {}).get("round_rps", []), (y or {}).get("round_rps", [])) if q]
        return (True, "rounds " + ", ".join(f"{r:.2f}×" for r in per)) if len(per) > 1 else None

    for c in (8, 32):
        a, t, sm = e2e.get(("chumbo", c)), e2e.get(("chumbo_traced", c)), e2e.get(("chumbo_sampled", c))
        tj = e2e.get(("chumbo_traced_json", c))
        row(f"issue 30: end to end, traces exported (OTLP http/protobuf, every request sampled) vs off, c={c}: req/s",
            t and t["rps"], a and a["rps"], "req/s", "≥ 0.9×", lambda r: r >= 0.9, also=rounds_of(t, a))
        if tj:
            row(f"issue 30: end to end, traces exported (OTLP http/json, every request sampled) vs off, c={c}: req/s",
                tj["rps"], a and a["rps"], "req/s", "≥ 0.9×", lambda r: r >= 0.9, also=rounds_of(tj, a))
        if trace_ratio:
            row(f"issue 30: end to end, traces exported (OTLP, `parentbased_traceidratio` {trace_ratio}: that share of the "
                f"requests sampled) vs off, c={c}: req/s", sm and sm["rps"], a and a["rps"], "req/s", "≥ 0.9×",
                lambda r: r >= 0.9, also=rounds_of(sm, a))
    w("")
    rb = {db: reg_bytes(db) for db in ("chumbo_bench", "chumbo_bench_1k", "chumbo_bench_10k")}
    w("Capability cache per backend (RssAnon after the first tools/list minus before, less the same for the 14-tool "
      "database; `chumbo.cache_stats()` registry_bytes): " + "; ".join(
          f"{label}: {f(d, 1) if d is not None else '–'} MiB RssAnon, registry {f((rb[db] or 0) / 2**20, 1)} MiB"
          for label, db, d in (("1,000 tools", "chumbo_bench_1k", cache_mib), ("10,000 tools", "chumbo_bench_10k", cache10k_mib))) + ".")
    w("")

    # CPU per request ------------------------------------------------------------------------------
    w("## CPU time per request, by process")
    w("")
    w("From `/proc/<pid>/stat` (utime + stime, and the cutime + cstime of reaped children, so backends that exit inside "
      "the window count too) of each process tree over the measured window, divided by the requests completed in it: "
      "**edge** the Deno edge, **reference** the Node server, **postgres** the bench cluster's postmaster and every "
      "backend, **load** the load generator (wrk or pgbench). CPU time does not depend on what else runs on the machine "
      "as much as throughput does; with 2 cores shared by the load generator, per-request CPU is what bounds a ratio.")
    w("")
    w("| scenario | requests | edge µs | reference µs | postgres µs | load generator µs | **server side µs** | total µs |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")

    def cpu_row(label, r, n):
        cu = (r or {}).get("cpu_us") or {}
        if not cu:
            return
        server = cu.get("edge", 0) + cu.get("reference", 0) + cu.get("postgres", 0)
        w(f"| {label} | {f(n)} | {f(cu.get('edge'))} | {f(cu.get('reference'))} | {f(cu.get('postgres'))} | "
          f"{f(cu.get('load'))} | **{f(server)}** | {f(server + cu.get('load', 0))} |")

    for c in sorted({c for _, c in e2e}):
        cpu_row(f"end to end, chumbo (wrk → edge → `chumbo.http`), c={c}", e2e.get(("chumbo", c)), (e2e.get(("chumbo", c)) or {}).get("requests"))
        cpu_row(f"end to end, chumbo exporting traces, c={c}", e2e.get(("chumbo_traced", c)), (e2e.get(("chumbo_traced", c)) or {}).get("requests"))
        cpu_row(f"end to end, chumbo exporting traces as OTLP/JSON, c={c}", e2e.get(("chumbo_traced_json", c)),
                (e2e.get(("chumbo_traced_json", c)) or {}).get("requests"))
        cpu_row(f"end to end, chumbo exporting traces of {meta.get('trace_ratio')} of the requests, c={c}", e2e.get(("chumbo_sampled", c)),
                (e2e.get(("chumbo_sampled", c)) or {}).get("requests"))
        cpu_row(f"end to end, reference (wrk → Node → pg), c={c}", e2e.get(("reference", c)), (e2e.get(("reference", c)) or {}).get("requests"))
        cpu_row(f"raw query alone (pgbench), c={c}", g("raw_call_page", c), (g("raw_call_page", c) or {}).get("n"))
    for name, label in (("chumbo_call_page", f"`chumbo.handle` tools/call, {f(rp)} rows"),
                        ("floor_like_call_page", f"like-for-like floor, {f(rp)} rows"),
                        ("floor_call_page", f"plain floor, {f(rp)} rows"),
                        ("chumbo_call_one", f"`chumbo.handle` tools/call, {f(ro)} row"),
                        ("floor_like_call_one", f"like-for-like floor, {f(ro)} row"),
                        ("floor_call_one", f"plain floor, {f(ro)} row"),
                        ("chumbo_call_noop", "`chumbo.handle` tools/call, do-nothing tool"),
                        ("floor_like_call_noop", "like-for-like floor, do-nothing tool"),
                        ("list_100", "tools/list, 100 tools, warm"),
                        ("list_1000", "tools/list, 1,000 tools, warm"),
                        ("list_10000", "tools/list, 10,000 tools, warm"),
                        ("call_one_100", f"`chumbo.handle` tools/call, {f(ro)} row, 100 tools"),
                        ("call_one_10000", f"`chumbo.handle` tools/call, {f(ro)} row, 10,000 tools"),
                        ("resources_100", "`chumbo.handle` resources/list and read, 100 tools"),
                        ("resources_10000", "`chumbo.handle` resources/list and read, 10,000 tools"),
                        ("list_1000_ddl1s", "tools/list, 1,000 tools, a COMMENT changing every second")):
        for c in clients:
            cpu_row(f"{label} (pgbench), c={c}", g(name, c), (g(name, c) or {}).get("n"))
    w("")
    w("The pgbench rows count from the end of each round's warm-up; the wrk rows cover each whole measured run (the "
      "servers were warmed up by a separate run).")
    w("")

    # 1 ---------------------------------------------------------------------------------------
    w("## 1. In the database: chumbo against the floors (pgbench)")
    w("")
    w("Same cluster, same data: the example app's seed plus `bench/sql/data.sql` (each organization has one active "
      f"project and {f(rp)} archived ones, so `list_projects` answers {f(ro)} row for `{{\"status\":\"active\"}}` and "
      f"{f(rp)} rows, one page of chumbo's, for `{{\"status\":\"archived\"}}`; the table stays small, so the tool's query is "
      "cheap and chumbo's own work is what is compared), run as the edge's login role. **chumbo** is "
      "`select chumbo.handle('<tools/call list_projects>', '<Alice's claims>')` with its defaults (audit on; the bench cluster preloads chumbo, so a read-only call's audit row goes to the audit queue and a background worker writes it, src/bookkeeping/audit_queue.rs). The "
      "**like-for-like floor** (`bench.floor_like_for_like`, `bench/sql/floor.sql`) is issue 14's: one plpgsql call that "
      "sets `request.jwt.claims`, switches to `authenticated`, calls `mcp.list_projects` inside a `begin … exception` "
      "block, `jsonb_agg(to_jsonb(row))`, builds the whole JSON-RPC response (the rows as text and as structuredContent) "
      "and resets the role; it writes no audit row. The **plain floor** (`bench.floor_list_projects`) runs the tool's body "
      "inline and returns `{\"rows\": …}` only. Before timing, the run checks that chumbo's structuredContent equals the "
      "floors' rows (as jsonb), with no cursor. The sides alternate in rounds (`BENCH_ROUNDS`); each point is measured "
      "once every client has answered once (warm backends), its transactions and seconds summed over the rounds.")
    w("")
    for key, title in (("call_page", f"tools/call `list_projects {{\"status\":\"archived\"}}` — {f(rp)} rows"),
                       ("call_one", f"tools/call `list_projects {{\"status\":\"active\"}}` — {f(ro)} row")):
        w(f"### {title}")
        w("")
        w("| clients | like-for-like floor TPS | chumbo TPS | **TPS chumbo / like-for-like** | like-for-like avg / p99 ms "
          "| chumbo avg / p99 ms | plain floor TPS | TPS chumbo / plain floor |")
        w("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c in clients:
            a, b, pl = g(f"floor_like_{key}", c), g(f"chumbo_{key}", c), g(f"floor_{key}", c)
            if not a or not b:
                continue
            w(f"| {c} | {f(a['tps'])} | {f(b['tps'])} | **{ratio(b['tps'], a['tps'])}** | {f(a['avg_ms'], 2)} / {f(a['p99_ms'], 2)} "
              f"| {f(b['avg_ms'], 2)} / {f(b['p99_ms'], 2)} | {f(pl['tps']) if pl else '–'} | {ratio(b['tps'], pl['tps']) if pl else '–'} |")
        w("")
    w("### tools/list with 1,000 tools")
    w("")
    w("The first page of `tools/list` (`page_size` 100) with 1,000 tools: warm (no DDL), against the same while "
      "`comment on function mcp.zz_bench_tool_00001` runs every second (`bench.touch(0)` as the owner, from a separate "
      "session), so every backend sees the catalog change about once a second.")
    w("")
    w("| clients | warm TPS (avg / p99 ms) | COMMENT every second TPS (avg / p99 ms) | COMMENTs during the rounds | **TPS DDL / warm** |")
    w("|---:|---:|---:|---:|---:|")
    cell = lambda r: f"{f(r['tps'])} ({f(r['avg_ms'], 2)} / {f(r['p99_ms'], 2)})" if r else "–"
    for c in clients:
        a, b = g("list_1000", c), g("list_1000_ddl1s", c)
        if a or b:
            w(f"| {c} | {cell(a)} | {cell(b)} | {b.get('ddl', '–') if b else '–'} | **{ratio(tps(b), tps(a))}** |")
    w("")
    if any(g(n, c) for n in ("list_10", "ddl_list_1000") for c in clients):
        w("`BENCH_EXTRA=1`: tools/list of 10 tools, every page of 1,000, and a DDL change right before each tools/list "
          "(\"DDL alone\" is the same transaction without the tools/list).")
        w("")
        w("| clients | 10 tools TPS (avg ms) | 1,000 tools, all pages TPS (avg ms) | DDL alone, 10 tools | DDL + list, 10 tools "
          "| DDL alone, 1,000 tools | DDL + list, 1,000 tools |")
        w("|---:|---:|---:|---:|---:|---:|---:|")
        cell2 = lambda r: f"{f(r['tps'])} ({f(r['avg_ms'], 2)})" if r else "–"
        for c in clients:
            w(f"| {c} | {cell2(g('list_10', c))} | {cell2(g('list_1000_all', c))} | {cell2(g('ddl_only_10', c))} "
              f"| {cell2(g('ddl_list_10', c))} | {cell2(g('ddl_only_1000', c))} | {cell2(g('ddl_list_1000', c))} |")
        w("")
    fails = [f"{n} c={c}: {r['failed']}" for (n, c), r in pgb.items() if r.get("failed")]
    w("Failed transactions: " + (", ".join(fails) if fails else "none") + ". Points measured over "
      + f"{min((r['window_s'] for r in pgb.values()), default=0)}–{max((r['window_s'] for r in pgb.values()), default=0)} s, "
      + f"{f(sum(r['n'] for r in pgb.values()))} transactions in all.")
    w("")

    # 2 ---------------------------------------------------------------------------------------
    w("## 2. End to end: chumbo edge + extension against the standard stack and the raw query")
    w("")
    w("Same machine, database, tokens (ES256, `scripts/mint-token.ts`) and tool (`tools/call list_projects "
      f"{{\"status\":\"archived\"}}`, {f(rp)} rows for Alice). **chumbo**: the Deno edge (`scripts/edge.sh`, "
      f"a pool of {meta.get('db_pool', '8')} connections) forwarding to `chumbo.http`, which verifies the token in the database. **reference** (`bench/reference/server.mjs`): "
      "Node, the official TypeScript SDK (stateless Streamable HTTP, JSON responses, a new server and transport per request), "
      f"`jose` verifying the token, a `pg` pool of {meta.get('db_pool', '8')} running the same query as `authenticated` with the same claims "
      "(begin; set_config claims + role; query; commit). wrk with `bench/wrk/mcp.lua`. **raw query**: pgbench running "
      "`select * from mcp.list_projects('archived')` (`bench/pgbench/raw_call_page.sql`) as the edge's login role with "
      "`PGOPTIONS=\"-c role=authenticated -c request.jwt.claims=<Alice's claims>\"`: one round trip, no JSON, no HTTP, no "
      "token. At each concurrency each server gets a 2 s warm-up, then chumbo, the reference and the raw query alternate "
      "in rounds; percentiles merge the rounds' latency distributions.")
    w("")
    w("| clients | chumbo req/s | p50 / p99 ms | reference req/s | p50 / p99 ms | **req/s chumbo/reference** | **p99 chumbo/reference** "
      "| raw query TPS (p99 ms) | **chumbo / raw** | reference / raw |")
    w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in sorted({c for _, c in e2e}):
        a, b, raw = e2e.get(("chumbo", c)), e2e.get(("reference", c)), g("raw_call_page", c)
        if not a or not b:
            continue
        rt = tps(raw)
        w(f"| {c} | {f(a['rps'])} | {f(a['p50_us'] / 1000, 2)} / {f(a['p99_us'] / 1000, 2)} | {f(b['rps'])} | "
          f"{f(b['p50_us'] / 1000, 2)} / {f(b['p99_us'] / 1000, 2)} | **{ratio(a['rps'], b['rps'])}** | **{ratio(a['p99_us'], b['p99_us'])}** | "
          f"{f(rt)} ({f(raw['p99_ms'], 2) if raw else '–'}) | **{ratio(a['rps'], rt)}** | {ratio(b['rps'], rt)} |")
    w("")
    w("Correctness: wrk checks every response (HTTP 200, a tools/call result holding Acme's projects and nothing of Globex):")
    w("")
    for (s_, c), r in sorted(e2e.items()):
        w(f"- {s_} c={c}: {f(r['good'])} good, {f(r['bad'])} bad, {r['non2xx']} non-2xx, {r['socket_errors']} socket errors")
    for r in badsamples:
        w(f"- first bad response, {r['server']} c={r['c']}: `{r['text'].strip()[:200]}`")
    w("")
    if verify:
        w("Verification pass (`bench/verify.mjs`, Alice and Bob interleaved, every response compared with the ids the owner "
          "sees for the caller's organization: the structuredContent rows exactly, in one page; the text names every one "
          "of them and none of the other user's): "
          + ("**all passed**" if verify["rc"] == 0 else f"**FAILED (exit {verify['rc']})**"))
        w("")
        w("```")
        w(verify["text"].rstrip())
        w("```")
        w("")

    # 3 ---------------------------------------------------------------------------------------
    w("## 3. Per-backend memory of the capability cache")
    w("")
    w("A fresh session as `chumbo_edge`; its backend measured before any chumbo call, after a `ping` (the library "
      "loaded), after the first tools/list, after a second one and after walking every page "
      "(`bench/reference/memory.mjs`). The measure the issue names is the backend's private memory, `RssAnon` from "
      "`/proc/<pid>/status` (an upper bound: it also holds what the calls allocated transiently and glibc kept, the "
      "library's start-up and PostgreSQL's catalog caches); the sum of `pg_backend_memory_contexts` is shown next to it, "
      "and the cache's own bytes from `chumbo.cache_stats()` (a counting allocator) where the build has that function, "
      "called in the same session after all pages. The cache's share is the difference between the 1,000-tool and the "
      "10-tool database.")
    w("")
    w("| database | tools | RssAnon before any call | after ping (Δ) | after first tools/list (Δ) | after a second (Δ) | after all pages (Δ) "
      "| memory contexts Δ after all pages | `chumbo.cache_stats()` |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    mib = lambda kb: f"{kb / 1024:.1f} MiB"
    d = lambda r, k, field="rssanon_kb": f"{'+' if r[k][field] >= r['before'][field] else '−'}{mib(abs(r[k][field] - r['before'][field]))}"
    for db, r in mem.items():
        cs = r.get("cacheStats")
        w(f"| {db} | {r['tools']} ({r['pages']} pages) | {mib(r['before']['rssanon_kb'])} | {d(r, 'afterPing')} | {d(r, 'afterFirst')} "
          f"| {d(r, 'afterSecond')} | **{d(r, 'afterAll')}** | {d(r, 'afterAll', 'contexts_kb')} "
          f"| {'`' + json.dumps(cs)[:300] + '`' if cs else 'not in this build'} |")
    if cache_mib is not None:
        w("")
        w(f"Cache of 1,000 tools minus cache of 10 (RssAnon growth to after all pages): **{cache_mib:.1f} MiB** per backend.")
    w("")

    # profiles ----------------------------------------------------------------------------------
    w("## Profiles")
    w("")
    if any(p["name"] == "unavailable" for p in perf):
        w("perf could not sample on this machine; see the analysis for the next step.")
    else:
        w("`perf record -e cpu-clock -a -g` (whole machine, 8 s, the load running at concurrency 8; hardware counters are "
          "not available in this VM). First block: CPU share per command (other people's work included); second: the "
          "hottest symbols in `postgres` processes (self time, ≥ 0.8%).")
        titles = {
            "callgraph_c1": "one backend answering chumbo tools/call (c=1), call graph: inclusive time (children) / self time",
            "call_c8": "pgbench, chumbo tools/call, c=8",
            "ddl_list_1000_c8": "pgbench, DDL then tools/list with 1,000 tools, c=8",
            "e2e_chumbo_c8": "wrk → chumbo edge → chumbo.http, c=8",
            "e2e_reference_c8": "wrk → reference Node server, c=8",
        }
        for p in perf:
            w("")
            w(f"### {titles.get(p['name'], p['name'])}")
            w("")
            w("```")
            w(p["text"].rstrip())
            w("```")
    w("")
    tasks = next((r for r in recs if r["kind"] == "tasks"), None)
    if tasks:
        lat, dr = tasks["latency"], tasks["drain"]
        w("## Durable tasks")
        w("")
        w("`bench/tasks.mjs` on the bench cluster (chumbo preloaded), one client through `chumbo.handle` as Alice. "
          "**Latency**: the same tools/call answered directly and as a task (created, run by a background worker, "
          "seen `completed` by `tasks/get` polled every millisecond), alternating in rounds. A task costs two "
          "synchronous commits the direct read-only call does not make (the task row before the answer, the result "
          "with the tool's writes), so the ratio is large for a sub-millisecond tool and small for one that works. "
          "**Drain**: tasks queued with `task_workers` 0, then 2 workers and one wake; another client calls the tool "
          "directly throughout.")
        w("")
        w("| | direct p50 | task p50 | task p95 | task / direct (p50) | calls |")
        w("|---|---|---|---|---|---|")
        w(f"| 1-row tool | {lat['direct_p50_ms']:.2f} ms | {lat['task_p50_ms']:.2f} ms | {lat['task_p95_ms']:.2f} ms | "
          f"{lat['task_p50_ms'] / lat['direct_p50_ms']:.2f}x | {lat['calls']} |")
        w(f"| the same with 50 ms of work | {lat['slow_direct_p50_ms']:.2f} ms | {lat['slow_task_p50_ms']:.2f} ms | "
          f"{lat['slow_task_p95_ms']:.2f} ms | {lat['slow_task_p50_ms'] / lat['slow_direct_p50_ms']:.2f}x | {lat['slow_calls']} |")
        w("")
        w("| drain | |")
        w("|---|---|")
        w(f"| tasks queued, completed | {dr['tasks']:,}, {dr['completed']:,} |")
        w(f"| created (one client) | {dr['create_per_s']:.0f}/s |")
        w(f"| drained by 2 workers | {dr['drain_per_s']:.0f}/s ({dr['drain_s']:.1f} s) |")
        w(f"| other client's direct calls, alone / during the drain | {dr['other_alone_per_s']:.0f}/s, p95 "
          f"{dr['other_alone_p95_ms']:.2f} ms / {dr['other_during_per_s']:.0f}/s, p95 {dr['other_during_p95_ms']:.2f} ms |")
        w("")
    analysis = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analysis.md")
    if os.path.exists(analysis):
        w("## Analysis and next steps")
        w("")
        w("_Written by hand in `bench/analysis.md` after reading a run of this command; included verbatim. The numbers "
          "above are this run's._")
        w("")
        w(open(analysis).read().rstrip())
        w("")
    with open(out_path, "w") as fh:
        fh.write("\n".join(L))


def e2e(*rounds):
    """One wrk point measured in rounds (interleaved with the others): requests and seconds
    summed; percentiles of the rounds merged from each round's quantile function (wrk prints
    1,000 quantiles), weighted by its requests; CPU seconds (ROUND.cpu.json) summed."""
    req = dur = good = bad = non2xx = sock = 0
    samples, cpu_s, lat_max, round_p99, round_rps = [], {}, 0, [], []
    for path in rounds:
        res = qs = None
        for line in open(path):
            if line.startswith("RESULT "):
                res = {k: float(v) for k, v in (x.split("=") for x in line.split()[1:])}
            elif line.startswith("QUANTILES "):
                qs = [float(x) for x in line.split()[1:]]
        if res is None:
            raise SystemExit(f"{path}: no RESULT line")
        req += res["requests"]
        dur += res["duration_us"] / 1e6
        good, bad, non2xx, sock = good + res["good"], bad + res["bad"], non2xx + res["non2xx"], sock + res["socket_errors"]
        lat_max = max(lat_max, res["max_us"])
        if qs:
            samples += [(q, res["requests"] / len(qs)) for q in qs]
        round_p99.append(res["p99_us"])
        round_rps.append(res["requests"] / (res["duration_us"] / 1e6) if res["duration_us"] else 0)
        if os.path.exists(path + ".cpu.json"):
            for k, v in json.load(open(path + ".cpu.json"))["cpu_s"].items():
                cpu_s[k] = cpu_s.get(k, 0) + v

    def wq(p):
        samples.sort()
        total, acc = sum(w for _, w in samples), 0
        for q, w in samples:
            acc += w
            if acc >= p / 100 * total:
                return q
        return samples[-1][0] if samples else None

    return {
        "requests": int(req), "rps": req / dur if dur else 0, "p50_us": wq(50), "p90_us": wq(90), "p99_us": wq(99),
        "max_us": lat_max, "good": int(good), "bad": int(bad), "non2xx": int(non2xx), "socket_errors": int(sock),
        "rounds": len(rounds), "round_p99_us": round_p99, "round_rps": round_rps, "window_s": round(dur, 2),
        "cpu_us": {k: v / req * 1e6 for k, v in cpu_s.items()} if req else {},
    }


if __name__ == "__main__":
    if sys.argv[1] == "pgbench":
        print(json.dumps(pgbench(float(sys.argv[2]), sys.argv[3], *sys.argv[4:])))
    elif sys.argv[1] == "cpu":
        cpu(*sys.argv[2:])
    elif sys.argv[1] == "e2e":
        print(json.dumps(e2e(*sys.argv[2:])))
    elif sys.argv[1] == "render":
        render(*sys.argv[2:5])
    else:
        sys.exit(__doc__)
