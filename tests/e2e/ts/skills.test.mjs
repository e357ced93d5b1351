// Skills (SEP-2640) with the official TypeScript client's skills API
// (@modelcontextprotocol/client 2.4.0, ext/skills), through the edge, exactly as the README shows:
// the README's install block (tar, sha256sum, psql) runs as written on tests/e2e/skills/refunds,
// an open listen stream hears it, then SkillsClient lists, gets and reads every file in both
// eras, verifying each against the listed size and digest, and the bytes equal the files on disk.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { SkillsClient, SkillVerificationError } from "@modelcontextprotocol/client/ext/skills";
import { MCP_URL, need, TOKENS } from "./common.mjs";

const DB_URL = need("E2E_DATABASE_URL"); // owner connection (tests/e2e/run.sh)
const ROOT = new URL("../../../", import.meta.url).pathname;
const FIXTURE = join(ROOT, "tests/e2e/skills/refunds");
const FILES = ["SKILL.md", "references/policy.md"];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sha256 = (b) => createHash("sha256").update(b).digest("hex");

async function connect(token, mode) {
  const client = new Client({ name: "chumbo-e2e-skills", version: "1.0.0" }, { versionNegotiation: { mode } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(MCP_URL), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

/** The README's install block, run as written (in a scratch copy of the fixture's parent). */
function runReadmeInstall() {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const block = readme.match(/<!-- skills:begin -->\s*```sh\n([\s\S]*?)```\s*<!-- skills:end -->/);
  assert.ok(block, "README.md has no <!-- skills:begin --> sh block");
  const dir = mkdtempSync(join(tmpdir(), "chumbo-e2e-skills-"));
  try {
    cpSync(FIXTURE, join(dir, "refunds"), { recursive: true });
    const r = spawnSync("bash", ["-euo", "pipefail", "-c", block[1]], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, DATABASE_URL: DB_URL },
    });
    assert.equal(r.status, 0, `README block failed:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /refunds\s*\|\s*2\s*\|/, r.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe(
  "skills through the edge, TypeScript client 2.4.0 ext/skills",
  () => {
    let modern, legacy;
    before(async () => {
      modern = await connect(TOKENS.alice, "auto");
      legacy = await connect(TOKENS.bob, "legacy");
    });
    after(async () => {
      await modern?.close();
      await legacy?.close();
      if (DB_URL) spawnSync("psql", ["-X", "-q", DB_URL, "-c", "select chumbo.drop_skill('refunds')"]);
    });

    test("the README's install reaches an open listen stream as resources/list_changed", async () => {
      assert.equal(modern.getNegotiatedProtocolVersion(), "2026-07-28");
      const seen = [];
      modern.setNotificationHandler("notifications/resources/list_changed", (n) => void seen.push(n));
      const sub = await modern.listen({ resourcesListChanged: true });
      try {
        runReadmeInstall();
        for (let i = 0; i < 50 && !seen.length; i++) await sleep(100);
        assert.ok(seen.length >= 1, "no resources/list_changed after install_skill");
      } finally {
        await sub.close();
      }
    });

    for (const era of ["modern", "legacy"]) {
      test(`${era}: list, get and read every file, verified against digest and size`, async () => {
        const client = era === "modern" ? modern : legacy;
        const skills = new SkillsClient(client);
        assert.equal(skills.supported, true, "the server declares io.modelcontextprotocol/skills");
        const listing = await skills.list();
        assert.deepEqual(listing.invalid, []);
        const names = listing.skills.map((s) => s.frontmatter.name).sort();
        assert.deepEqual(names, ["chumbo-builder", "refunds"]);
        if (era === "modern") {
          assert.equal(listing.cacheScope, "private");
          assert.equal(typeof listing.ttlMs, "number");
        }
        const refunds = listing.skills.find((s) => s.frontmatter.name === "refunds");
        assert.equal(refunds.uri, "skill://refunds/SKILL.md");
        assert.equal(refunds.frontmatter.metadata.owner, "billing");
        // the entry's digests are sha256sum's of the files on disk
        for (const f of FILES) {
          const onDisk = readFileSync(join(FIXTURE, f));
          const r = refunds.resources.find((x) => x.uri === `skill://refunds/${f}`);
          assert.ok(r, `${f} listed`);
          assert.equal(r.digest, `sha256:${sha256(onDisk)}`);
          assert.equal(r.size, onDisk.length);
        }
        const { skill } = await skills.get("skill://refunds/SKILL.md");
        assert.deepEqual(skill, refunds);
        const manifest = await skills.read(refunds);
        assert.equal(manifest.verified, true);
        assert.equal(manifest.frontmatter.name, "refunds");
        assert.match(manifest.body, /# Refunds/);
        const policy = await skills.read(refunds, "references/policy.md");
        assert.equal(policy.verified, true);
        assert.deepEqual(Buffer.from(policy.bytes), readFileSync(join(FIXTURE, "references/policy.md")));
        // chumbo's own skill reads and verifies too
        const builder = listing.skills.find((s) => s.frontmatter.name === "chumbo-builder");
        for (const r of builder.resources) {
          const file = await skills.read(builder, r.uri);
          assert.equal(file.verified, true, r.uri);
        }
        // an unlisted file is refused by the client before any request; unknown skills are -32602
        await assert.rejects(skills.read(refunds, "references/nope.md"), SkillVerificationError);
        await assert.rejects(skills.get("skill://nope/SKILL.md"), (e) => e.code === -32602);
      });
    }

    test("resources/list carries the skill's files; a revoked skill is gone on the next request", async () => {
      const { resources } = await modern.listResources();
      const md = resources.find((r) => r.uri === "skill://refunds/SKILL.md");
      assert.equal(md?.mimeType, "text/markdown");
      assert.equal(md?.name, "refunds");
      const r = spawnSync("psql", [
        "-X",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        DB_URL,
        "-c",
        "select chumbo.revoke_skill('refunds', 'authenticated')",
      ], { encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      const listing = await new SkillsClient(legacy).list();
      assert.deepEqual(listing.skills.map((s) => s.frontmatter.name), ["chumbo-builder"]);
      await assert.rejects(modern.readResource({ uri: "skill://refunds/SKILL.md" }));
    });
  },
);
