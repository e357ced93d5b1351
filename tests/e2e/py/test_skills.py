"""Skills (SEP-2640) with the official Python client (mcp 2.3.0). It has no skills API
(skills/list, skills/get), so this checks what it does have: every file of chumbo's own skill
(chumbo-builder, which the example app grants to authenticated) is in resources/list with its
size, and resources/read returns exactly the bytes of skills/chumbo-builder/ in the repository,
in both eras."""

import hashlib
from pathlib import Path

import pytest

from conftest import TOKENS, connect

pytestmark = pytest.mark.anyio

SKILL_DIR = Path(__file__).resolve().parents[3] / "skills" / "chumbo-builder"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_builder_skill_files_read_back_exactly(mode):
    files = {p.relative_to(SKILL_DIR).as_posix(): p.read_bytes() for p in SKILL_DIR.rglob("*") if p.is_file()}
    assert "SKILL.md" in files
    async with connect(TOKENS["alice"], mode=mode) as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        for path, data in files.items():
            uri = f"skill://chumbo-builder/{path}"
            assert uri in listed, sorted(listed)
            assert listed[uri].size == len(data)
            contents = (await client.read_resource(uri)).contents
            assert len(contents) == 1
            got = contents[0].text.encode("utf-8")
            assert hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest(), uri
        assert listed["skill://chumbo-builder/SKILL.md"].mime_type == "text/markdown"
