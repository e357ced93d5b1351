// Checks what the docs point at: every repository path named in docs/*.md, CONTRIBUTING.md and
// tests/README.md exists (a glob must match something), and every test a doc cites by name exists
// in the file named right before it. make test's `doc-refs` stage; also:
//
//   deno run --allow-read scripts/check-doc-refs.ts [--list] [FILE.md ...]   (default: the files above;
//                                                   --list prints every reference checked)
//
// What counts as a path: a markdown link's target (relative to the document), and every token of
// an inline code span or fenced code block that starts with a top-level entry of the repository
// and a slash (`src/identity/session/`, `tests/regress/sql/*.sql`). Placeholders (`NAME.spec`, `<family>`)
// and run-time directories (.chumbo/, target/) are not checked.
//
// A test is cited by name as a code span holding only a test file's path, then the name in double
// quotes, then more names separated by commas:
//   `tests/e2e/ts/state.test.mjs` "Bob does not see Alice's value, and his own does not touch hers"
// A name must be a test/describe/it name in a .mjs/.js file (a string literal, not a template
// with ${}), a test function in a .py file, and anywhere in the text of any other file (a label in
// a regression .sql, a step of an isolation .spec). Whitespace is compared collapsed, so a name
// may wrap across lines.

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const DEFAULT_DOCS = ["CONTRIBUTING.md", "tests/README.md"];
for (const e of Deno.readDirSync(`${ROOT}/docs`)) {
  if (e.isFile && e.name.endsWith(".md")) DEFAULT_DOCS.push(`docs/${e.name}`);
}
// Not in the repository: created at run time, or ignored by git.
const RUNTIME = new Set([".chumbo", "target", "node_modules", ".git"]);
// Words that stand for a name in an example path (`tests/isolation/specs/NAME.spec`).
const PLACEHOLDER = /(^|[^A-Za-z])(NAME|FEATURE|OLD|NEW|MAJOR|VERSION|ID|PORT|HASH|X)([^A-Za-z]|$)|[<>$…]|\.\.\./;
// Example paths written in lower case.
const EXAMPLES = new Set(["tests/regress/sql/feature_name.sql"]);

const TOP = new Set([...Deno.readDirSync(ROOT)].map((e) => e.name).filter((n) => !RUNTIME.has(n)));

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** A path segment with glob characters (* ? [..] {a,b}) as a regular expression. */
function segmentRegex(seg: string): RegExp {
  let re = "";
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i];
    if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "{") {
      const end = seg.indexOf("}", i);
      re += `(?:${seg.slice(i + 1, end).split(",").map((a) => a.replace(/[.+^$()|[\]\\]/g, "\\$&")).join("|")})`;
      i = end;
    } else if (c === "[") {
      const end = seg.indexOf("]", i);
      re += seg.slice(i, end + 1);
      i = end;
    } else re += c.replace(/[.+^$()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

/** Does PATH (relative to ROOT, may hold globs) name at least one existing file or directory? */
function matches(path: string): boolean {
  let dirs = [ROOT];
  for (const seg of path.split("/").filter((s) => s && s !== ".")) {
    const next: string[] = [];
    for (const dir of dirs) {
      if (!/[*?[{]/.test(seg)) {
        if (exists(`${dir}/${seg}`)) next.push(`${dir}/${seg}`);
        continue;
      }
      const re = segmentRegex(seg);
      try {
        for (const e of Deno.readDirSync(dir)) if (re.test(e.name)) next.push(`${dir}/${e.name}`);
      } catch { /* not a directory */ }
    }
    dirs = next;
    if (!dirs.length) return false;
  }
  return dirs.length > 0;
}

/** A code token that names a repository path, cleaned of surrounding punctuation; or null. */
function repoPath(token: string): string | null {
  const t = token.replace(/^[("'[]+/, "").replace(/[)"',.;:\]]+$/, "").replace(/^\.\//, "");
  const slash = t.indexOf("/");
  if (slash <= 0 || !TOP.has(t.slice(0, slash))) return null;
  if (PLACEHOLDER.test(t) || EXAMPLES.has(t)) return null;
  return t;
}

const collapse = (s: string) => s.replace(/\s+/g, " ").trim();

/** The test names FILE defines (or null: any text of the file counts). */
function testNames(file: string, text: string): Set<string> | null {
  if (/\.(m?js|cjs|ts)$/.test(file)) {
    const names = new Set<string>();
    // test("name", ...), describe('name', ...), it(["method"], "name", ...) (methods.test.mjs)
    const call = /\b(?:test|it|describe|suite)\(\s*(?:\[[^\]]*\]\s*,\s*)?(["'`])((?:(?!\1)[^\\]|\\.)*)\1/g;
    for (const m of text.matchAll(call)) if (!m[2].includes("${")) names.add(collapse(m[2]));
    return names;
  }
  if (file.endsWith(".py")) return new Set([...text.matchAll(/^\s*(?:async\s+)?def\s+(test_\w+)/gm)].map((m) => m[1]));
  return null;
}

const problems: string[] = [];
const list = Deno.args.includes("--list");
const args = Deno.args.filter((a) => a !== "--list");
const docs = args.length ? args : DEFAULT_DOCS;
let paths = 0, names = 0;
for (const doc of docs) {
  const docPath = doc.startsWith("/") ? doc : `${ROOT}/${doc}`;
  const text = Deno.readTextFileSync(docPath);
  const docDir = docPath.slice(0, docPath.lastIndexOf("/"));
  const lineOf = (index: number) => text.slice(0, index).split("\n").length;
  const where = (index: number) => `${doc}:${lineOf(index)}`;

  // Markdown links to local files: [text](target), relative to the document.
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1].split("#")[0];
    if (!target || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    paths++;
    if (list) console.log(`${where(m.index!)}: link ${target}`);
    const abs = target.startsWith("/") ? `${ROOT}${target}` : `${docDir}/${target}`;
    if (!exists(abs)) problems.push(`${where(m.index!)}: link to a missing file: ${m[1]}`);
  }

  // Code: fenced blocks and inline spans (a span never crosses a blank line).
  const code: { body: string; index: number; end: number }[] = [];
  const fences = /^```[^\n]*\n([\s\S]*?)^```/gm;
  const outside = text.replace(fences, (all) => " ".repeat(all.length));
  for (const m of text.matchAll(fences)) code.push({ body: m[1], index: m.index!, end: m.index! + m[0].length });
  for (const m of outside.matchAll(/`([^`\n]+(?:\n(?!\s*\n)[^`\n]*)*)`/g)) {
    code.push({ body: m[1], index: m.index!, end: m.index! + m[0].length });
  }
  for (const { body, index, end } of code) {
    for (const token of body.split(/\s+/)) {
      const path = repoPath(token);
      if (!path) continue;
      paths++;
      if (list) console.log(`${where(index)}: path ${path}`);
      if (!matches(path)) problems.push(`${where(index)}: no such path: ${path}`);
    }
    // Test names: "name", "name" right after a span that is a single test file path.
    const path = repoPath(body.trim());
    if (!path || /\s/.test(body.trim()) || !/\.(m?js|py|sql|spec|sh)$/.test(path)) continue;
    const after = text.slice(end).match(/^\s+"([^"]+)"(?:\s*,\s*"[^"]+")*/);
    if (!after) continue;
    const cited = [...after[0].matchAll(/"([^"]+)"/g)].map((m) => collapse(m[1]));
    const file = `${ROOT}/${path}`;
    if (!exists(file)) continue; // reported above
    const fileText = Deno.readTextFileSync(file);
    const defined = testNames(path, fileText);
    for (const name of cited) {
      names++;
      if (list) console.log(`${where(index)}: test ${path} "${name}"`);
      const found = defined ? defined.has(name) : collapse(fileText).includes(name);
      if (!found) problems.push(`${where(index)}: ${path} has no test named "${name}"`);
    }
  }
}

if (problems.length) {
  console.error(`check-doc-refs: ${problems.length} broken reference(s):`);
  for (const p of problems.sort((a, b) => a.localeCompare(b, "en", { numeric: true }))) console.error(`  ${p}`);
  Deno.exit(1);
}
console.log(`check-doc-refs: ${paths} paths and ${names} test names in ${docs.length} files, all found`);
