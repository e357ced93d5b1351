"""The official Python MCP client (mcp 2.3.0) against the real stack: edge -> chumbo -> example app.

Both ways the client can talk: mode="legacy" (initialize handshake) and mode="auto" (probes
server/discover, the 2026-07-28 wire, and falls back to the handshake).
"""

import json

import httpx2
import pytest
from mcp.client.auth.utils import extract_resource_metadata_from_www_auth
from mcp.shared.exceptions import MCPError

from conftest import MCP_URL, TOKENS, USERS, connect

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("user", list(USERS))
async def test_sees_only_own_organization(user: str, mode: str):
    me = USERS[user]
    async with connect(TOKENS[user], mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"list_projects", "search_documents", "rename_project", "create_document"} <= set(tools)
        assert tools["list_projects"].input_schema["properties"]["status"]["enum"] == ["active", "archived"]

        res = await client.call_tool("list_projects", {})
        assert not res.is_error, res
        rows = res.structured_content["rows"]
        assert len(rows) == 3 and all(r["name"].startswith(me["org"]) for r in rows), rows
        assert me["other"] not in res.model_dump_json()

        denied = await client.call_tool("rename_project", {"project_id": me["other_project"], "name": "pwned"})
        assert denied.is_error and "project not found" in denied.content[0].text

        templates = (await client.list_resource_templates()).resource_templates
        assert any(t.uri_template == "app://projects/{id}" for t in templates), templates
        uri = f"app://projects/{me['project']}"
        contents = (await client.read_resource(uri)).contents
        assert len(contents) == 1 and str(contents[0].uri) == uri
        project = json.loads(contents[0].text)
        assert project["organization"] == me["org"] and project["documents"]

        # Another organization's project is "resource not found", by the code of the era the
        # session speaks: -32002 up to 2025-11-25 (legacy), -32602 with data.uri on 2026-07-28
        # (auto lands there); never an internal error or a permission error that confirms it exists.
        other_uri = f"app://projects/{me['other_project']}"
        with pytest.raises(MCPError) as err:
            await client.read_resource(other_uri)
        if mode == "legacy":
            assert err.value.code == -32002, err.value.error
        else:
            assert err.value.code == -32602, err.value.error
            assert isinstance(err.value.data, dict) and err.value.data.get("uri") == other_uri, err.value.error
        assert me["other"] not in str(err.value) and me["other"] not in str(err.value.error)

        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert {"summarize_project", "status_report"} <= prompts
        report = await client.get_prompt("status_report", {"status": "active"})
        dumped = report.model_dump_json()
        assert me["org"] in dumped and me["other"] not in dumped
        summary = await client.get_prompt("summarize_project", {"project_id": me["project"]})
        dumped = summary.model_dump_json()
        assert f"{me['org']} confidential" in dumped and me["other"] not in dumped


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("token", ["missing", "expired", "forged"])
async def test_bad_token_is_an_auth_error(token: str, mode: str):
    statuses: list[int] = []
    with pytest.raises(Exception) as err:  # noqa: B017 - the client's error type is what we inspect
        async with connect(TOKENS.get(token), mode=mode, statuses=statuses) as client:
            await client.list_tools()
    assert 401 in statuses, (statuses, repr(err.value))
    assert statuses.count(200) == 0, statuses
    # What the client reports: the server's JSON-RPC error for the 401, as an MCPError.
    errors = [e for e in leaves(err.value) if isinstance(e, MCPError)]
    assert errors, repr(err.value)
    message = errors[0].error.message.lower()
    assert "token" in message or "authoriz" in message, message


def leaves(e: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in leaves(sub)]
    return [e]


@pytest.mark.parametrize("token", ["missing", "expired", "forged"])
async def test_challenge_points_to_metadata(token: str):
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    if TOKENS.get(token):
        headers["authorization"] = f"Bearer {TOKENS[token]}"
    async with httpx2.AsyncClient(timeout=30) as http:
        res = await http.post(MCP_URL, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert res.status_code == 401
        challenge = res.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        if token != "missing":
            assert 'error="invalid_token"' in challenge, challenge
        prm_url = extract_resource_metadata_from_www_auth(res)
        assert prm_url, challenge
        prm = (await http.get(prm_url)).json()
        assert prm["resource"] == MCP_URL and prm["authorization_servers"]


async def test_http_edges():
    base = {"accept": "application/json, text/event-stream", "content-type": "application/json",
            "authorization": f"Bearer {TOKENS['alice']}", "mcp-protocol-version": "2025-11-25"}
    async with httpx2.AsyncClient(timeout=30) as http:
        assert (await http.get(MCP_URL, headers={**base, "accept": "text/event-stream"})).status_code == 405
        assert (await http.delete(MCP_URL, headers=base)).status_code == 405
        note = await http.post(MCP_URL, headers=base, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert note.status_code == 202 and note.content == b""
        evil = await http.post(MCP_URL, headers={**base, "origin": "http://evil.example.com"},
                               json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert evil.status_code == 403
