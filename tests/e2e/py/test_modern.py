"""MCP 2026-07-28 with the official Python client (mcp 2.3.0): `auto` mode probes server/discover
and must end up on the modern era against chumbo (no fallback to initialize); `legacy` mode stays
on the handshake. Either way the tools run as the caller (Alice sees Acme only)."""

import pytest

from conftest import TOKENS, USERS, connect

pytestmark = pytest.mark.anyio


async def test_auto_mode_negotiates_2026_and_calls_tools_as_alice():
    statuses: list[int] = []
    me = USERS["alice"]
    async with connect(TOKENS["alice"], mode="auto", statuses=statuses) as client:
        assert client.protocol_version == "2026-07-28"
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"list_projects", "rename_project"} <= tools
        res = await client.call_tool("list_projects", {})
        assert not res.is_error, res
        rows = res.structured_content["rows"]
        assert len(rows) == 3 and all(r["name"].startswith(me["org"]) for r in rows), rows
        assert me["other"] not in res.model_dump_json()
    # the discover probe was answered (no 4xx that would have sent the client to initialize)
    assert statuses and all(s == 200 for s in statuses), statuses


async def test_legacy_mode_stays_on_the_handshake():
    async with connect(TOKENS["alice"], mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        res = await client.call_tool("list_projects", {})
        assert not res.is_error and len(res.structured_content["rows"]) == 3
