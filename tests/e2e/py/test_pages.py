"""Paged results with the official Python client (mcp 2.3.0), in both of its modes: a 5,000-row
tool walked page by page as Alice by copying next_call (every row exactly once, none of Bob's),
Alice's cursor replayed by Bob refused, wide rows within the page's byte budget, and a failing
text renderer answered as an isError result. The tools are created here (as the owner, through
psql) on top of the example app's RLS (organization membership) and dropped afterwards."""

import json
import os
import subprocess

import pytest

from conftest import TOKENS, connect

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
ACME = "a0000000-0000-4000-8000-000000000000"
GLOBEX = "b0000000-0000-4000-8000-000000000000"

SETUP = f"""
create table public.e2e_events (id int primary key, org_id uuid not null, label text not null);
alter table public.e2e_events enable row level security;
alter table public.e2e_events force row level security;
create policy members on public.e2e_events for select to authenticated
  using (org_id in (select private.user_org_ids()));
grant select on public.e2e_events to authenticated;
-- Acme (Alice) 5,000 events, Globex (Bob) 1,000, interleaved
insert into public.e2e_events
  select i, case when i % 6 = 0 then '{GLOBEX}'::uuid else '{ACME}'::uuid end,
         case when i % 6 = 0 then 'Globex event ' else 'Acme event ' end || i
    from generate_series(1, 6000) i;
create function mcp.e2e_events() returns setof public.e2e_events
  language sql stable set search_path = '' as $$ select * from public.e2e_events order by id $$;
comment on function mcp.e2e_events() is 'Every event of your organizations.';
create function mcp.e2e_wide() returns table (id int, label text)
  language sql stable set search_path = '' as $$ select i, repeat('Acme ', 700) from generate_series(1, 40) i $$;
create function public.e2e_render_fails(rows jsonb) returns text
  language plpgsql stable as $$ begin raise exception 'renderer refused'; end $$;
create function mcp.e2e_render_fails() returns setof int
  language sql stable as $$ select generate_series(1, 3) $$;
comment on function mcp.e2e_render_fails() is '@mcp {{"text": "public.e2e_render_fails"}}';
revoke execute on function mcp.e2e_events(), mcp.e2e_wide(), mcp.e2e_render_fails() from public;
grant execute on function mcp.e2e_events(), mcp.e2e_wide(), mcp.e2e_render_fails(),
  public.e2e_render_fails(jsonb) to authenticated;
"""
TEARDOWN = """
drop function if exists mcp.e2e_events(), mcp.e2e_wide(), mcp.e2e_render_fails(), public.e2e_render_fails(jsonb);
drop table if exists public.e2e_events;
"""


def psql(sql: str) -> None:
    url = os.environ.get("E2E_DATABASE_URL")
    if not url:  # a test never skips for want of what tests/e2e/run.sh provides
        pytest.fail("E2E_DATABASE_URL is not set (run the suite through tests/e2e/run.sh)")
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url], input=sql, text=True, check=True,
                   capture_output=True)


@pytest.fixture(scope="module", autouse=True)
def paged_tools():
    psql(TEARDOWN)
    psql(SETUP)
    yield
    psql(TEARDOWN)


async def walk(client, name: str, arguments: dict) -> tuple[list[dict], list]:
    """Follows next_call to the end; returns every row and every page's result."""
    rows, pages = [], []
    call = {"name": name, "arguments": arguments}
    while call is not None and len(pages) < 1000:
        res = await client.call_tool(call["name"], call["arguments"])
        assert not res.is_error, res.content
        pages.append(res)
        rows.extend(res.structured_content["rows"])
        call = res.structured_content.get("next_call")
    return rows, pages


@pytest.mark.parametrize("mode", MODES)
async def test_alice_walks_5000_rows_by_cursor(mode: str):
    async with connect(TOKENS["alice"], mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["e2e_events"].input_schema["properties"]["cursor"]["type"] == "string"
        rows, pages = await walk(client, "e2e_events", {})
    ids = [r["id"] for r in rows]
    assert ids == [i for i in range(1, 6001) if i % 6 != 0]  # every Acme row exactly once, in order
    assert all(r["label"].startswith("Acme") for r in rows)
    assert len(pages) == 100 and all(len(p.structured_content["rows"]) == 50 for p in pages)
    # the text says the same in words, with the exact arguments, until the last page
    first = pages[0]
    assert first.structured_content["next_call"]["name"] == "e2e_events"
    assert json.dumps(first.structured_content["next_call"]["arguments"], separators=(",", ":")) in first.content[0].text
    assert "Globex" not in "".join(p.model_dump_json() for p in pages)
    assert "next_cursor" not in pages[-1].structured_content and "last page" in pages[-1].content[0].text


@pytest.mark.parametrize("mode", MODES)
async def test_bob_cannot_replay_alices_cursor(mode: str):
    async with connect(TOKENS["alice"], mode=mode) as alice:
        first = await alice.call_tool("e2e_events", {})
    call = first.structured_content["next_call"]
    async with connect(TOKENS["bob"], mode=mode) as bob:
        replay = await bob.call_tool(call["name"], call["arguments"])
        assert replay.is_error, replay
        assert "another caller" in replay.content[0].text
        assert "Acme" not in replay.model_dump_json()
        own, _ = await walk(bob, "e2e_events", {})
        assert len(own) == 1000 and all(r["label"].startswith("Globex") for r in own)


async def test_wide_rows_stay_within_the_byte_budget():
    async with connect(TOKENS["alice"], mode="auto") as client:
        rows, pages = await walk(client, "e2e_wide", {})
    assert [r["id"] for r in rows] == list(range(1, 41))
    budget = 32 * 1024  # the default page_bytes
    for p in pages:
        row_bytes = sum(len(json.dumps(r, separators=(",", ":"))) + 1 for r in p.structured_content["rows"])
        assert row_bytes <= budget, row_bytes
        assert len(p.content[0].text.encode()) <= budget + 1024  # the rows' text plus the footer
    assert len(pages) > 1 and max(len(p.structured_content["rows"]) for p in pages) < 40


async def test_renderer_error_is_a_tool_error():
    async with connect(TOKENS["alice"], mode="auto") as client:
        res = await client.call_tool("e2e_render_fails", {})
        assert res.is_error and "renderer refused" in res.content[0].text, res
        # the server is fine afterwards
        ok = await client.call_tool("e2e_events", {})
        assert not ok.is_error
