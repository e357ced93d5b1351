#!/usr/bin/env bash
# The audit queue (src/bookkeeping/audit_queue.rs) on a cluster of its own started with
# shared_preload_libraries = 'chumbo' (the regression suites run without it, so they cover the
# rows written in the call). Claims checked, each failing without the queue or with it broken:
#   - a read-only call stays a read-only transaction: no transaction id, and it works in a
#     read-only transaction (an in-call insert cannot); its row arrives once the worker wrote it,
#     with the values an in-call row has (the call's transaction start as `at`);
#   - a call that wrote keeps its row in its own transaction (same xmin as its data);
#   - a statement that fails after the call drops the row; a transaction block writes in the call
#     (a rollback leaves nothing);
#   - concurrent sessions: every row arrives exactly once, written in batches, no slot leaks;
#   - a full queue (worker stopped): later calls write their rows themselves, none lost or doubled;
#   - a crash 0.5 s after calls loses none of their rows;
#   - a fast shutdown loses nothing; the worker comes back after it is terminated or after a crash;
#   - with a synchronous standby that never answers, the worker's rows still arrive and a fast
#     shutdown is not held up (a commit waiting for a standby ends only by die(), which the worker
#     does not take: it held a pg_auto_failover demotion forever);
#   - anon and authenticated can call neither chumbo.audit_flush nor chumbo.audit_queue_stats;
#   - an idle worker exits (DROP DATABASE is not refused for its connection).
# Env: AUDIT_QUEUE_PG_PORT (default: a free port).
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib.sh"

source "$(dirname "$0")/../preloaded-cluster.sh"

pick_port AUDIT_QUEUE_PG_PORT
WORK="$(mktemp -d)"
cleanup() { stop_if_running; rm -rf "$WORK"; }
trap cleanup EXIT
preloaded_cluster audit-queue "$AUDIT_QUEUE_PG_PORT"
"$ROOT/scripts/load-db.sh" "$PORT" chumbo_audit_queue app >/dev/null

q() { psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres -d chumbo_audit_queue "$@"; }
fails=0
check() { # what expected actual
  if [[ "$2" == "$3" ]]; then log "ok: $1"
  else printf 'FAIL: %s\n  expected: %s\n  got:      %s\n' "$1" "$2" "$3" >&2; fails=$((fails + 1)); fi
}
ALICE='{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
# call TOOL [ARG]: the SQL of one tools/call of mcp.TOOL(tag) as Alice
call() { printf "chumbo.handle('{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\",\"arguments\":{\"tag\":\"%s\"}}}', '%s')" "$1" "${2:-x}" "$ALICE"; }
rows() { q -c "select count(*) from chumbo.audit_events where capability = '$1'"; }
flush() { q -c "select chumbo.audit_flush()"; }
worker_running() { q -c "select count(*) from pg_stat_activity where backend_type = 'chumbo audit'"; }
wait_worker() { for _ in $(seq 100); do [[ "$(worker_running)" == 1 ]] && return 0; sleep 0.05; done; return 1; }

q <<'SQL'
create table public.probe_log (tag text primary key);
grant select, insert on public.probe_log to authenticated;
do $$
declare t text;
begin
  foreach t in array array['probe_first', 'probe_ro', 'probe_at', 'probe_abort', 'probe_block',
                           'probe_many', 'probe_stop', 'probe_again', 'probe_crash', 'probe_full',
                           'probe_old', 'probe_sync'] loop
    execute format('create function mcp.%I(tag text) returns text language sql stable as $f$ select tag $f$', t);
    execute format('comment on function mcp.%I(text) is %L', t, 'Echoes its tag.');
    execute format('grant execute on function mcp.%I(text) to authenticated', t);
  end loop;
end $$;
create function mcp.probe_write(tag text) returns text language sql as
  $$ insert into public.probe_log values (tag) returning tag $$;
comment on function mcp.probe_write(text) is 'Logs its tag.';
grant execute on function mcp.probe_write(text) to authenticated;
SQL

check "no audit worker before the first call" 0 "$(worker_running)"
q -c "select $(call probe_first)" >/dev/null
wait_worker || true
check "the first call that can queue starts the worker" 1 "$(worker_running)"
check "the worker serves this database" t \
  "$(q -c "select (s->>'accepting')::boolean and (s->>'database')::oid = d.oid from chumbo.audit_queue_stats() s, pg_database d where d.datname = current_database()")"

# A read-only call: no transaction id, and it works where nothing may be written.
check "a read-only call takes no transaction id" "t|ro1" \
  "$(q -c "with r as materialized (select $(call probe_ro ro1) a) select txid_current_if_assigned() is null, a #>> '{result,content,0,text}' from r")"
check "a read-only call works in a read-only transaction" "ro2" \
  "$(PGOPTIONS='-c default_transaction_read_only=on' q -c "select $(call probe_ro ro2) #>> '{result,content,0,text}'")"
check "audit_flush waits for the worker" t "$(flush)"
check "both read-only calls have their rows" 2 "$(rows probe_ro)"
# The same call written in the call (a transaction block): every column but id/at/trace_id matches.
q -c "begin" -c "select $(call probe_ro ro1)" -c "commit" >/dev/null
check "queued rows carry what a row written in the call carries" "1|3" \
  "$(q -c "select count(distinct (era, method, principal, outcome, duration_ms > 0, run_id)), count(distinct trace_id) from chumbo.audit_events where capability = 'probe_ro'")"
at="$(q -c "with r as materialized (select $(call probe_at) a) select now() from r")"
flush >/dev/null
check "a queued row's time is its call's transaction start" "t" \
  "$(q -c "select at = '$at'::timestamptz from chumbo.audit_events where capability = 'probe_at'")"

# A call that wrote: the row is written with its data, in the same transaction.
xid="$(q -c "with r as materialized (select $(call probe_write w1) a) select a #>> '{result,content,0,text}', txid_current() % 4294967296 from r")"
check "the writing call wrote" "w1" "${xid%%|*}"
check "a writing call's row commits in its transaction" "${xid#*|}" \
  "$(q -c "select xmin::text from chumbo.audit_events where capability = 'probe_write'")"

# A statement that fails after the call: its row is dropped with it.
q -c "select $(call probe_abort), 1 / (random() * 0)::int" >/dev/null 2>&1 && fails=$((fails + 1))
flush >/dev/null
check "a row of a call whose statement failed is dropped" 0 "$(rows probe_abort)"
# A transaction block writes the row in the call: seen inside, gone with the rollback.
check "inside a block the row is written in the call" 1 \
  "$(q -c "begin" -c "select $(call probe_block)" -c "select count(*) from chumbo.audit_events where capability = 'probe_block'" -c "rollback" | tail -n 1)"
flush >/dev/null
check "a rolled-back block leaves no row" 0 "$(rows probe_block)"
check "no reserved slot is left behind" 0 "$(q -c "select chumbo.audit_queue_stats()->>'reserved'")"

# Concurrent sessions, each call its own transaction.
for s in 1 2 3 4; do
  for i in $(seq 250); do echo "select $(call probe_many "s$s-$i");"; done > "$WORK/many-$s.sql"
done
for s in 1 2 3 4; do q -f "$WORK/many-$s.sql" >/dev/null & done
wait
flush >/dev/null
check "1,000 concurrent calls: 1,000 rows, each once" "1000|1000" \
  "$(q -c "select count(*), count(distinct trace_id) from chumbo.audit_events where capability = 'probe_many'")"
check "they were written in batches (far fewer transactions than rows)" t \
  "$(q -c "select count(distinct xmin::text) < 250 from chumbo.audit_events where capability = 'probe_many'")"
check "no slot leaked and nothing overflowed" "0|0|0" \
  "$(q -c "select s->>'reserved', s->>'queued', s->>'overflowed' from chumbo.audit_queue_stats() s")"

# A full queue: with the worker stopped (SIGSTOP), calls beyond its 2,048 slots write their rows
# in the call; once the worker runs again, every row is there exactly once.
q -c "select $(call probe_full f0)" >/dev/null
wait_worker || true
worker_pid="$(q -c "select pid from pg_stat_activity where backend_type = 'chumbo audit'")"
overflowed_before="$(q -c "select chumbo.audit_queue_stats()->>'overflowed'")"
kill -STOP "$worker_pid"
for i in $(seq 2500); do echo "select $(call probe_full "f$i");"; done > "$WORK/full.sql"
q -f "$WORK/full.sql" >/dev/null
check "with the worker stopped, the queue fills and later calls write their rows themselves" t \
  "$(q -c "select (s->>'queued')::int >= 2000 and (s->>'overflowed')::int - $overflowed_before >= 450 from chumbo.audit_queue_stats() s")"
kill -CONT "$worker_pid"
flush >/dev/null
check "a full queue loses no row and writes none twice" "2501|2501" \
  "$(q -c "select count(*), count(distinct trace_id) from chumbo.audit_events where capability = 'probe_full'")"

# A crash half a second after the calls: their rows were written already (the worker writes
# every 100 ms), so the crash loses none of them.
for i in $(seq 200); do echo "select $(call probe_old "$i");"; done > "$WORK/old.sql"
q -f "$WORK/old.sql" >/dev/null
sleep 0.5
ctl -m immediate stop
start
check "a crash 0.5 s after the calls loses none of their rows" 200 "$(rows probe_old)"

# A fast shutdown right after the calls: the worker writes everything before it exits.
for i in $(seq 300); do echo "select $(call probe_stop "$i");"; done > "$WORK/stop.sql"
q -f "$WORK/stop.sql" >/dev/null
ctl -m fast stop
start
check "a fast shutdown loses no queued row" 300 "$(rows probe_stop)"

# A synchronous standby that never answers (as one being promoted in a failover does not): the
# worker's commits do not wait for it, so the rows arrive, and a fast shutdown (pg_auto_failover
# demoting a primary) is not held up by the worker. A commit waits for a standby only until die().
q -c "alter system set synchronous_standby_names = 'chumbo_absent_standby'" -c "select pg_reload_conf()" >/dev/null
q -c "create table public.sync_rep_probe ()" >/dev/null 2>&1 &
waiting=0
for _ in $(seq 200); do
  waiting="$(q -c "select count(*) from pg_stat_activity where wait_event = 'SyncRep'")"
  [[ "$waiting" == 1 ]] && break; sleep 0.05
done
check "a write now waits for the absent standby" 1 "$waiting"
for i in $(seq 50); do echo "select $(call probe_sync "$i");"; done > "$WORK/sync.sql"
q -f "$WORK/sync.sql" >/dev/null
check "the worker writes its rows without waiting for the standby" t "$(flush)"
check "every row arrives" 50 "$(rows probe_sync)"
t0=$SECONDS
stopped="$(as_pg "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w -t 20 stop >/dev/null 2>&1 && echo yes || echo no)"
check "a fast shutdown is not held by the worker (took $((SECONDS - t0)) s)" yes "$stopped"
wait || true   # the probe write: ended by the shutdown
[[ "$stopped" == yes ]] || ctl -m immediate stop
start
q -c "alter system reset synchronous_standby_names" -c "select pg_reload_conf()" >/dev/null
check "the rows written while the standby was absent are kept" 50 "$(rows probe_sync)"

# The worker terminated: calls write their rows themselves until a call starts it again.
q -c "select $(call probe_again a0)" >/dev/null
wait_worker || true
q -c "select pg_terminate_backend(pid) from pg_stat_activity where backend_type = 'chumbo audit'" >/dev/null
for _ in $(seq 100); do [[ "$(worker_running)" == 0 ]] && break; sleep 0.05; done
q -c "select $(call probe_again a1)" >/dev/null
check "without a worker the row is written in the call" 2 "$(rows probe_again)"
sleep 1.2
q -c "select $(call probe_again a2)" >/dev/null
wait_worker || true
check "a later call starts the worker again" 1 "$(worker_running)"
flush >/dev/null
check "and its row arrives" 3 "$(rows probe_again)"

# A crash (immediate shutdown): written rows stay, and the queue works again after recovery.
ctl -m immediate stop
start
q -c "select $(call probe_crash c1)" >/dev/null
wait_worker || true
q -c "select $(call probe_crash c2)" >/dev/null
flush >/dev/null
check "after a crash the queue works again" 2 "$(rows probe_crash)"
check "rows written before the crash are kept" 300 "$(rows probe_stop)"

# Neither function is for request roles.
for role in anon authenticated; do
  for f in "audit_flush()" "audit_queue_stats()"; do
    out="$(q -c "set role $role" -c "select chumbo.$f" 2>&1 || true)"
    check "$role cannot call chumbo.$f" "permission denied" "$(grep -o 'permission denied' <<<"$out" | head -n 1)"
  done
done

# An idle worker exits, so it does not hold the database against a plain DROP DATABASE.
for _ in $(seq 300); do [[ "$(worker_running)" == 0 ]] && break; sleep 0.05; done
check "an idle worker exits" 0 "$(worker_running)"
check "DROP DATABASE (without FORCE) is not refused" ok \
  "$(psql -X -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -c "drop database chumbo_audit_queue" >/dev/null 2>&1 && echo ok)"

if ((fails)); then die "audit-queue: $fails check(s) failed (server log: $DIR/server.log)"; fi
log "audit-queue: all checks passed"
