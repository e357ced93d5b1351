"""Environment written by tests/e2e/run.sh, and a client factory around the official Python SDK."""

import os
from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def need(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.exit(f"{name} is not set (run the suite through tests/e2e/run.sh)", returncode=2)
    return value


MCP_URL = need("MCP_URL")
TOKENS = {
    "alice": need("ALICE_TOKEN"),
    "bob": need("BOB_TOKEN"),
    "expired": need("EXPIRED_TOKEN"),
    "forged": need("FORGED_TOKEN"),
}
# The example app's seed (supabase/seed.sql): every name of an organization carries its name.
USERS = {
    "alice": {"org": "Acme", "other": "Globex", "project": "a1000000-0000-4000-8000-000000000001",
              "other_project": "b1000000-0000-4000-8000-000000000001"},
    "bob": {"org": "Globex", "other": "Acme", "project": "b1000000-0000-4000-8000-000000000001",
            "other_project": "a1000000-0000-4000-8000-000000000001"},
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


@asynccontextmanager
async def connect(token: str | None, *, mode: str = "auto", statuses: list[int] | None = None):
    """An MCP client session for `token`; HTTP statuses the client saw are appended to `statuses`."""

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [record]}) as http:
        async with Client(streamable_http_client(MCP_URL, http_client=http), mode=mode) as client:
            yield client
