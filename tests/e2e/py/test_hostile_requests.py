"""Random hostile requests through the edge (a seeded generator: the same requests every run;
E2E_FUZZ_SEED and E2E_FUZZ_REQUESTS explore further): whatever the method, headers, body or
arguments, the answer is a client error or an answer, never a 5xx, never SQL or Rust internals,
never another organization's data; and the edge and the database still serve a plain call after
all of them. Then the same from Alice and Bob at once while the tools change under them. Read-only
tools only (the database is shared with the suites that run after this one): every other name the
generator sends is one that does not exist."""

import json
import os
import random
import re
import subprocess
import threading
import time
import uuid
from urllib.parse import urlsplit

import httpx2

from conftest import MCP_URL, TOKENS, USERS

SEED = int(os.environ.get("E2E_FUZZ_SEED", "26"))
REQUESTS = int(os.environ.get("E2E_FUZZ_REQUESTS", "2000"))

# The example app's tools that cannot write, and their parameters.
TOOLS = {
    "list_projects": ["status"],
    "list_notes": [],
    "search_documents": ["query", "limit"],
    "my_organizations": [],
    "project": ["id"],
    "summarize_project": ["project_id"],
    "status_report": ["status"],
    "project_documents": ["project_id"],
}
METHODS = [
    "initialize", "notifications/initialized", "ping", "tools/list", "tools/call", "resources/list",
    "resources/templates/list", "resources/read", "resources/subscribe", "prompts/list", "prompts/get",
    "completion/complete", "logging/setLevel", "tasks/get", "tasks/list", "tasks/cancel", "tasks/result",
    "subscriptions/listen", "server/discover", "notifications/cancelled", "notifications/progress",
    "sampling/createMessage", "", "tools/", "tools/call\u00e9", "x" * 300,
]
VERSIONS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "1999-01-01", ""]


def forbidden(who: str) -> re.Pattern:
    """What an answer to `who` must never hold: PostgreSQL's or Rust's internals, or the other
    user's organization or project."""
    other = USERS[who]["other"], USERS[who]["other_project"]
    return re.compile(r"ERROR: |CONTEXT: |(?i:syntax error|sqlstate|pg_catalog|pl/pgsql|panicked|backtrace|"
                      r"chumbo_edge|" + "|".join(map(re.escape, other)) + ")")


class Generator:
    def __init__(self, seed: int, who: str = "alice"):
        self.r = random.Random(seed)
        self.token = TOKENS[who]
        self.project = USERS[who]["project"]

    def text(self) -> str:
        r = self.r
        return r.choice([
            "", "a", "ü" * r.randint(1, 40), "x" * r.randint(200, 40_000), "' or 1=1 --", "%s%n", "\\", '"',
            "null", "$$; drop table public.projects; --", "app://projects/" + str(uuid.UUID(int=r.getrandbits(128))),
            str(uuid.UUID(int=r.getrandbits(128))), self.project, "00-" + "a" * 32 + "-" + "b" * 16 + "-01",
            "../../etc/passwd", "\u2028", "😀" * 5, "-1", "1e999", "active", "archived", "\ufeff",
        ])

    def value(self, depth: int = 0):
        r = self.r
        k = r.randint(0, 9 if depth < 4 else 4)
        if k == 0:
            return None
        if k == 1:
            return r.choice([True, False])
        if k == 2:
            return r.choice([0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**30, 1.5, 1e308, -0.0])
        if k in (3, 4):
            return self.text()
        if k in (5, 6):
            return [self.value(depth + 1) for _ in range(r.randint(0, 3))]
        if k == 7 and depth < 3:
            deep = None
            for _ in range(r.choice([10, 200])):
                deep = [deep]
            return deep
        return {r.choice([self.text()[:20], "name", "uri", "_meta", "type"]): self.value(depth + 1)
                for _ in range(r.randint(0, 3))}

    def meta(self, version: str | None) -> dict:
        r = self.r
        m = {}
        if version is not None:
            m["io.modelcontextprotocol/protocolVersion"] = version
            m["io.modelcontextprotocol/clientCapabilities"] = r.choice([{}] * 4 + [self.value()])
            m["io.modelcontextprotocol/clientInfo"] = r.choice([{"name": "fuzz", "version": "1"}] * 4 + [self.value()])
        for key in ["traceparent", "tracestate", "progressToken", "io.modelcontextprotocol/related-task",
                    "requestState", "inputResponses", "idempotencyKey", "io.modelcontextprotocol/runHandle"]:
            if r.random() < 0.15:
                m[key] = self.value()
        return m

    def params(self, method: str, version: str | None) -> dict:
        r = self.r
        p = {}
        tool = r.choice(list(TOOLS)) if r.random() < 0.8 else self.text()[:40]
        if method in ("tools/call", "prompts/get") or r.random() < 0.2:
            p["name"] = tool
        if method == "tools/call" or r.random() < 0.2:
            names = TOOLS.get(tool, []) + [self.text()[:10]]
            p["arguments"] = ({r.choice(names): self.value() for _ in range(r.randint(0, 3))}
                              if r.random() < 0.85 else self.value())
        for key, chance in [("uri", 0.2), ("cursor", 0.2), ("taskId", 0.1), ("task", 0.1), ("ref", 0.15),
                            ("argument", 0.15), ("level", 0.1), ("requestState", 0.1), ("inputResponses", 0.1)]:
            if r.random() < chance:
                p[key] = self.value()
        if method == "initialize" or r.random() < 0.1:
            p.update(protocolVersion=r.choice(VERSIONS), capabilities=self.value(), clientInfo=self.value())
        if version is not None or r.random() < 0.3:
            p["_meta"] = self.meta(version)
        return p if r.random() < 0.95 else self.value()

    def url(self) -> str:
        """The MCP URL, now and then another path of the edge's, or one it does not serve."""
        r = self.r
        if r.random() < 0.9:
            return MCP_URL
        base = urlsplit(MCP_URL)
        root = f"{base.scheme}://{base.netloc}"
        return r.choice([
            MCP_URL + "/", MCP_URL + "/..", MCP_URL + "/consent", MCP_URL + "/consent/../../x", MCP_URL + "?a=1&a=2",
            MCP_URL + "%2F..%2F", MCP_URL + "//", MCP_URL + "/" + "x" * 3000, root + "/", root + "/functions/v1/",
            root + "/.well-known/oauth-protected-resource" + base.path, root + "/.well-known/oauth-protected-resource",
            root + "/.well-known/oauth-authorization-server", root + base.path.upper(), root + "/%00",
        ])

    def request(self) -> tuple[str, str, dict, bytes]:
        """(HTTP method, URL, headers, body) of one request: most are well-formed around their params (so
        that they reach the methods), the rest are random throughout."""
        r = self.r
        well_formed = r.random() < 0.6
        if well_formed:
            version = r.choice(["2026-07-28", "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
            method = r.choice(METHODS[:20])
            modern = version == "2026-07-28"
            msg = {"jsonrpc": "2.0", "id": r.randint(1, 10**6), "method": method,
                   "params": self.params(method, version if modern else None)}
            if isinstance(msg["params"], dict) and modern:
                extra = msg["params"].get("_meta")
                msg["params"]["_meta"] = {**self.meta(version), **(extra if isinstance(extra, dict) else {})}
            headers = {"authorization": f"Bearer {self.token}", "accept": "application/json, text/event-stream",
                       "content-type": "application/json", "mcp-protocol-version": version}
            if modern:
                headers["mcp-method"] = method
                if isinstance(msg["params"], dict) and isinstance(msg["params"].get("name"), str):
                    headers["mcp-name"] = msg["params"]["name"][:200]
            return "POST", MCP_URL, {k: v.encode() for k, v in headers.items()}, json.dumps(msg).encode()
        version = r.choice(VERSIONS) if r.random() < 0.6 else None
        method = r.choice(METHODS) if r.random() < 0.95 else self.value()
        msg = {"jsonrpc": "2.0" if r.random() < 0.95 else self.value(), "method": method}
        if r.random() < 0.9:
            msg["id"] = r.choice([1, "a", 0, -1, 2**62, 1.5, None, [], {}, self.text()[:50]])
        if r.random() < 0.95:
            msg["params"] = self.params(method if isinstance(method, str) else "", version)
        body = r.choice([msg] * 8 + [[msg, msg], [], self.value()])
        raw = json.dumps(body).encode()
        if r.random() < 0.05:
            deep = b"[" * 5000 + b"]" * 5000
            raw = r.choice([b"{", b"", b"\x00\xff", deep, raw[: len(raw) // 2], b'{"a":"\\u0000"}',
                            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects",'
                            b'"arguments":{"status":' + deep + b"}}}"])
        headers = {"authorization": f"Bearer {self.token}",
                   "accept": r.choice(["application/json, text/event-stream"] * 6
                                      + ["application/json", "text/event-stream", "*/*", "text/html"]),
                   "content-type": r.choice(["application/json"] * 8 + ["text/plain", "application/json; charset=latin1"])}
        if version is not None and r.random() < 0.9:
            headers["mcp-protocol-version"] = version if r.random() < 0.9 else r.choice(VERSIONS)
            if isinstance(method, str) and r.random() < 0.8:
                headers["mcp-method"] = method
                if isinstance(msg.get("params"), dict) and isinstance(msg["params"].get("name"), str):
                    headers["mcp-name"] = msg["params"]["name"][:200]
        for key in ["mcp-session-id", "traceparent", "tracestate", "last-event-id", "origin", "x-api-key"]:
            if r.random() < 0.08:
                headers[key] = self.text()[:300]
        if r.random() < 0.05:
            headers["authorization"] = r.choice(["Bearer " + self.token[:-3], "Bearer", "Basic x", self.token])
        verb = r.choice(["POST"] * 18 + ["GET", "DELETE", "PUT", "OPTIONS", "HEAD", "PATCH"])
        # As bytes: a header may carry what is not ASCII (a method name's é, say), as a client may send.
        return verb, self.url(), {k: v.encode() for k, v in headers.items()}, raw


def send(http: httpx2.Client, gen: Generator, who: str, n: int) -> dict[int, int]:
    """n requests of `gen` as `who`, each answer checked; the count of each status."""
    statuses: dict[int, int] = {}
    never = forbidden(who)
    for i in range(n):
        verb, url, headers, body = gen.request()
        # A stream the server keeps open (subscriptions/listen, GET) is read only this far.
        with http.stream(verb, url, headers=headers, content=body if verb not in ("GET", "HEAD") else None) as res:
            text = b""
            for chunk in res.iter_bytes():
                text += chunk
                if len(text) > 200_000 or b"\n\n" in text and res.headers.get("content-type", "").startswith("text/event-stream"):
                    break
        statuses[res.status_code] = statuses.get(res.status_code, 0) + 1
        shown = text[:300].decode("utf-8", "replace")
        context = f"{who}'s request {i}: {verb} {url[:200]} {headers.get('mcp-method')!r} {body[:200]!r} -> {res.status_code} {shown}"
        assert res.status_code < 500, context
        assert not never.search(text.decode("utf-8", "replace")), context
    return statuses


def plain_call_works(who: str):
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_projects", "arguments": {},
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {},
                                 "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"}}}}
    res = httpx2.post(MCP_URL, json=call, headers={"authorization": f"Bearer {TOKENS[who]}",
                                                  "accept": "application/json, text/event-stream",
                                                  "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
                                                  "mcp-name": "list_projects"}, timeout=30)
    me = USERS[who]
    assert res.status_code == 200 and me["org"] in res.text and me["other"] not in res.text, res.text[:500]


def test_hostile_requests_get_a_client_error_or_an_answer_never_internals():
    with httpx2.Client(timeout=30) as http:
        statuses = send(http, Generator(SEED), "alice", REQUESTS)
    print("statuses", dict(sorted(statuses.items())))
    # Most requests reached the methods, not only the edge's own checks.
    assert statuses.get(200, 0) > REQUESTS // 3, statuses
    plain_call_works("alice")


# What changes the tools while the requests run: a description, an EXECUTE grant taken and given
# back, a tool created and dropped (each a new capability version; every backend rebuilds).
CHANGES = [
    "comment on function mcp.list_projects(text) is 'List your projects ({n}). @mcp {{\"title\": \"Projects {n}\"}}'",
    "revoke execute on function mcp.search_documents(text, integer) from authenticated",
    "grant execute on function mcp.search_documents(text, integer) to authenticated",
    "create or replace function mcp.zz_fuzz_{m}() returns int language sql stable as 'select {n}'",
    "drop function if exists mcp.zz_fuzz_{m}()",
]
RESTORE = ["grant execute on function mcp.search_documents(text, integer) to authenticated",
           "comment on function mcp.list_projects(text) is {comment}",
           "drop function if exists mcp.zz_fuzz_0(), mcp.zz_fuzz_1(), mcp.zz_fuzz_2()"]


def psql(sql: str) -> str:
    out = subprocess.run(["psql", os.environ["E2E_DATABASE_URL"], "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_alice_and_bob_at_once_while_the_tools_change():
    comment = psql("select coalesce(quote_literal(obj_description('mcp.list_projects(text)'::regprocedure, 'pg_proc')), 'null')")
    stop, failures, changes = threading.Event(), [], [0]

    def change():
        r = random.Random(SEED)
        try:
            while not stop.is_set():
                n = changes[0] = changes[0] + 1
                psql(r.choice(CHANGES).format(n=n, m=n % 3))
                time.sleep(0.02)
        except BaseException as e:
            failures.append(e)

    def requests(who: str, seed: int):
        try:
            gen = Generator(seed, who)
            with httpx2.Client(timeout=30) as http:
                send(http, gen, who, REQUESTS // 2)
                # On a fast machine: on until the tools really changed a number of times meanwhile.
                while changes[0] < 20 and not failures:
                    send(http, gen, who, 50)
        except BaseException as e:  # the assertion, to the main thread
            failures.append(e)

    changer = threading.Thread(target=change)
    clients = [threading.Thread(target=requests, args=(who, SEED + k))
               for k, who in enumerate(["alice", "bob", "alice", "bob"])]
    changer.start()
    try:
        for t in clients:
            t.start()
        for t in clients:
            t.join()
    finally:
        stop.set()
        changer.join()
        for sql in RESTORE:
            psql(sql.format(comment=comment))
    assert not failures, failures[0]
    plain_call_works("alice")
    plain_call_works("bob")
