#!/usr/bin/env python3
"""Helpers of bench/run.sh.

  report.py pgbench WARMUP_S warm|cold LOG_PREFIX...   steady-state numbers of a pgbench point (JSON line)
  report.py cpu OUT.json AFTER_S NAME=PID... -- COMMAND...
                                                CPU time of process trees while COMMAND runs
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
    start = {n: tree_ticks(table, int(p)) for n, p in groups.items()}
    load0 = table.get(child.pid, (0, 0, 0))[1]
    _, status, usage = os.wait4(child.pid, 0)
    t1, table = time.time(), proc_table()
    cpu_s = {n: (tree_ticks(table, int(p)) - start[n]) / TICK for n, p in groups.items()}
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
    lat, window, failed, cpu_s, cpu_n = [], 0.0, 0, {}, 0
    for prefix in prefixes:
        l, w, f, cs, cn = pgbench_round(prefix, warmup, mode)
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
    if meta.get("so_start") and meta["so_start"] != meta["so"]:
        w(f"| **warning** | chumbo.so was replaced during the run (at the start: {meta['so_start']}); backends started before and after ran different builds |")
    w(f"| clients | pgbench 15 (`-M prepared`, login role `chumbo_edge`), {meta['wrk']}, Node {meta['node']}, {meta['deno']}, @modelcontextprotocol/sdk {meta['sdk']} |")
    w("")

    # 1 ---------------------------------------------------------------------------------------
    w("## 1. In the database: chumbo against the floor (pgbench)")
    w("")
    w("Same cluster, same data: the example app with "
      f"{f(setup.get('projects_per_org'))} projects per organization (2 organizations), run as the edge's login role. "
      "The **floor** (`bench/sql/floor.sql`) is one plpgsql call that sets `request.jwt.claims`, switches to "
      "`authenticated`, runs the body of `mcp.list_projects`, builds the JSON of the rows and restores role and claims; "
      "**chumbo** is `select chumbo.handle('<tools/call list_projects>', '<Alice's claims>')` (`bench/pgbench/`). "
      "\"Floor calling the function\" is the same floor selecting from `mcp.list_projects(...)` instead of running its body "
      "inline (the function's `set search_path` keeps PostgreSQL from inlining it), a cost chumbo cannot avoid; chumbo "
      "against it is chumbo's own overhead. "
      "The two sides of each comparison run interleaved, in rounds (`BENCH_ROUNDS`), at each concurrency; each point is "
      "measured once every client has answered once (warm backends), its transactions and seconds summed over the rounds; "
      "latencies are per transaction.")
    w("")
    for key, title in (("call_small", f"tools/call `list_projects {{\"status\":\"archived\"}}` — {f(setup.get('rows_small'))} rows"),
                       ("call_all", f"tools/call `list_projects {{}}` — {f(setup.get('rows_all'))} rows (chumbo's `max_rows` cap; the floor has the same `limit`)")):
        w(f"### {title}")
        w("")
        w("| clients | floor TPS | chumbo TPS | **TPS chumbo/floor** | floor latency avg / p99 ms | chumbo latency avg / p99 ms "
          "| **avg latency chumbo/floor** | floor calling the function TPS | TPS chumbo/that |")
        w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c in clients:
            a, b, fn = pgb.get((f"floor_{key}", c)), pgb.get((f"chumbo_{key}", c)), pgb.get((f"floor_fn_{key}", c))
            if not a or not b:
                continue
            w(f"| {c} | {f(a['tps'])} | {f(b['tps'])} | **{ratio(b['tps'], a['tps'])}** | {f(a['avg_ms'], 2)} / {f(a['p99_ms'], 2)} "
              f"| {f(b['avg_ms'], 2)} / {f(b['p99_ms'], 2)} | **{ratio(b['avg_ms'], a['avg_ms'])}** "
              f"| {f(fn['tps']) if fn else '–'} | {ratio(b['tps'], fn['tps']) if fn else '–'} |")
        w("")
    w("### tools/list")
    w("")
    w(f"With 1,000 tools a `tools/list` answers one page (`page_size` 100); \"all pages\" is one transaction of the "
      f"{setup.get('pages')} calls that walk the cursors. \"After DDL\" runs `comment on function mcp.bench_tool_…` "
      "(through `bench.touch()`, as the owner) and then tools/list, so every call first reloads the registry; "
      "\"DDL alone\" is the same transaction without the tools/list, its floor.")
    w("")
    w("| clients | 10 tools TPS (avg ms) | 1,000 tools, first page TPS (avg ms) | **latency 1,000/10** | 1,000 tools, all pages TPS (avg ms) "
      "| DDL alone, 10 tools TPS (avg ms) | DDL + list, 10 tools TPS (avg ms) | DDL alone, 1,000 TPS (avg ms) | DDL + list, 1,000 tools TPS (avg ms) | **latency after DDL / warm, 1,000 tools** |")
    w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    cell = lambda r: f"{f(r['tps'])} ({f(r['avg_ms'], 2)})" if r else "–"
    for c in clients:
        g = lambda n: pgb.get((n, c))
        l10, l1k, all1k = g("list_10"), g("list_1000"), g("list_1000_all")
        d10, dl10, d1k, dl1k = g("ddl_only_10"), g("ddl_list_10"), g("ddl_only_1000"), g("ddl_list_1000")
        w(f"| {c} | {cell(l10)} | {cell(l1k)} | **{ratio(l1k and l1k['avg_ms'], l10 and l10['avg_ms'])}** | {cell(all1k)} "
          f"| {cell(d10)} | {cell(dl10)} | {cell(d1k)} | {cell(dl1k)} | **{ratio(dl1k and dl1k['avg_ms'], l1k and l1k['avg_ms'], 0)}** |")
    w("")
    fails = [f"{n} c={c}: {r['failed']}" for (n, c), r in pgb.items() if r.get("failed")]
    w("Failed transactions: " + (", ".join(fails) if fails else "none") + ". Points measured over "
      + f"{min((r['window_s'] for r in pgb.values()), default=0)}–{max((r['window_s'] for r in pgb.values()), default=0)} s, "
      + f"{f(sum(r['n'] for r in pgb.values()))} transactions in all.")
    w("")

    # 2 ---------------------------------------------------------------------------------------
    w("## 2. End to end: chumbo edge + extension against the standard stack (wrk)")
    w("")
    w("Same machine, database, tokens (ES256, `scripts/mint-token.ts`) and tool (`tools/call list_projects "
      f"{{\"status\":\"archived\"}}`, {f(setup.get('rows_small'))} rows for Alice). **chumbo**: the Deno edge (`scripts/edge.sh`, "
      "pool 8) forwarding to `chumbo.http`, which verifies the token in the database. **reference** (`bench/reference/server.mjs`): "
      "Node, the official TypeScript SDK (stateless Streamable HTTP, JSON responses, a new server and transport per request), "
      "`jose` verifying the token, a `pg` pool of 8 running the same query as `authenticated` with the same claims "
      "(begin; set_config claims + role; query; commit). wrk with `bench/wrk/mcp.lua`; 2 s warm-up, then the measured run. "
      "\"floor\" is the pgbench floor's TPS for the same tool at the same concurrency (section 1).")
    w("")
    w("| clients | chumbo req/s | p50 / p99 ms | reference req/s | p50 / p99 ms | **req/s chumbo/reference** | **p99 chumbo/reference** | floor TPS | **chumbo req/s / floor TPS** | reference req/s / floor TPS |")
    w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in clients:
        a, b, fl = e2e.get(("chumbo", c)), e2e.get(("reference", c)), pgb.get(("floor_call_small", c))
        if not a or not b:
            continue
        flt = fl["tps"] if fl else None
        w(f"| {c} | {f(a['rps'])} | {f(a['p50_us'] / 1000, 2)} / {f(a['p99_us'] / 1000, 2)} | {f(b['rps'])} | "
          f"{f(b['p50_us'] / 1000, 2)} / {f(b['p99_us'] / 1000, 2)} | **{ratio(a['rps'], b['rps'])}** | **{ratio(a['p99_us'], b['p99_us'])}** | "
          f"{f(flt)} | **{ratio(a['rps'], flt)}** | {ratio(b['rps'], flt)} |")
    w("")
    w("Correctness: wrk checks every response (HTTP 200, a tools/call result holding Acme's projects and nothing of Globex):")
    w("")
    for (s, c), r in sorted(e2e.items()):
        w(f"- {s} c={c}: {f(r['good'])} good, {f(r['bad'])} bad, {r['non2xx']} non-2xx, {r['socket_errors']} socket errors")
    for r in badsamples:
        w(f"- first bad response, {r['server']} c={r['c']}: `{r['text'].strip()[:200]}`")
    w("")
    if verify:
        w("Verification pass (`bench/verify.mjs`, Alice and Bob interleaved, every response compared with the ids the owner "
          "sees for the caller's organization, in the structured content and in the text): "
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
      "(`bench/reference/memory.mjs`). chumbo's registry cache lives in the Rust heap, not in a PostgreSQL memory "
      "context, so the measure is the backend's private memory, `RssAnon` from `/proc/<pid>/status` (an upper bound: it "
      "also holds what the calls allocate transiently, the library's own start-up and PostgreSQL's catalog caches filled by "
      "reflecting the functions; `VmRSS` adds touched shared buffers and mapped code). The sum of "
      "`pg_backend_memory_contexts` (PostgreSQL's own allocations) is shown next to it. The cache's share is the "
      "difference between the 1,000-tool and the 10-tool database.")
    w("")
    w("| database | tools | RssAnon before any call | after ping (Δ) | after first tools/list (Δ) | after a second (Δ) | after all pages (Δ) | VmRSS Δ after first tools/list | memory contexts Δ after first tools/list |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    mib = lambda kb: f"{kb / 1024:.1f} MiB"
    d = lambda r, k, field="rssanon_kb": f"{'+' if r[k][field] >= r['before'][field] else '−'}{mib(abs(r[k][field] - r['before'][field]))}"
    for db, r in mem.items():
        w(f"| {db} | {r['tools']} ({r['pages']} pages) | {mib(r['before']['rssanon_kb'])} | {d(r, 'afterPing')} | **{d(r, 'afterFirst')}** "
          f"| {d(r, 'afterSecond')} | {d(r, 'afterAll')} | {d(r, 'afterFirst', 'vmrss_kb')} | {d(r, 'afterFirst', 'contexts_kb')} |")
    cache_mib = None
    if "chumbo_bench" in mem and "chumbo_bench_1k" in mem:
        delta = lambda r: r["afterAll"]["rssanon_kb"] - r["before"]["rssanon_kb"]
        cache_mib = (delta(mem["chumbo_bench_1k"]) - delta(mem["chumbo_bench"])) / 1024
        w("")
        w(f"Cache of 1,000 tools minus cache of 10 (RssAnon growth to after all pages): **{cache_mib:.1f} MiB** per backend.")
    w("")

    # targets -----------------------------------------------------------------------------------
    w("## Targets (issue 6)")
    w("")
    w("| target | measured | |")
    w("|---|---|---|")
    def target(name, value, ok):
        w(f"| {name} | {value} | {'met' if ok else '**missed**'} |")
    a, b = pgb.get(("floor_call_small", 8)), pgb.get(("chumbo_call_small", 8))
    if a and b and a["tps"]:
        target("tools/call: chumbo ≥ 0.85× the floor's TPS at concurrency 8", f"{b['tps'] / a['tps']:.2f}× ({setup.get('rows_small')} rows)", b["tps"] >= 0.85 * a["tps"])
    a, b = pgb.get(("floor_call_all", 8)), pgb.get(("chumbo_call_all", 8))
    if a and b and a["tps"]:
        target("(same, the 1,000-row result)", f"{b['tps'] / a['tps']:.2f}×", b["tps"] >= 0.85 * a["tps"])
    l10, l1k = pgb.get(("list_10", 8)), pgb.get(("list_1000", 8))
    if l10 and l1k and l10.get("avg_ms") and l1k.get("avg_ms"):
        target("tools/list of 1,000 tools warm within 10× tools/list of 10 (latency, c=8, first page)",
               f"{l1k['avg_ms'] / l10['avg_ms']:.1f}×", l1k["avg_ms"] <= 10 * l10["avg_ms"])
    for c in (8, 32):
        a, b = e2e.get(("chumbo", c)), e2e.get(("reference", c))
        if a and b and b["rps"] and b["p99_us"]:
            target(f"end to end c={c}: ≥ 4× the reference's req/s", f"{a['rps'] / b['rps']:.2f}×", a["rps"] >= 4 * b["rps"])
            target(f"end to end c={c}: p99 ≤ ¼ of the reference's", f"{a['p99_us'] / b['p99_us']:.2f}×", a["p99_us"] <= b["p99_us"] / 4)
        fl = pgb.get(("floor_call_small", c))
        if a and fl:
            target(f"end to end c={c}: ≥ 0.5× the floor's TPS", f"{a['rps'] / fl['tps']:.2f}× (reference {b['rps'] / fl['tps']:.2f}×)" if b else f"{a['rps'] / fl['tps']:.2f}×",
                   a["rps"] >= 0.5 * fl["tps"])
    if cache_mib is not None:
        target("cache memory ≤ 8 MiB per backend at 1,000 tools (RssAnon growth, 1,000 tools minus 10)", f"{cache_mib:.1f} MiB", cache_mib <= 8)
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
    samples, cpu_s, lat_max = [], {}, 0
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
        "rounds": len(rounds), "window_s": round(dur, 2),
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
