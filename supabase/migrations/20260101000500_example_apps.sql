-- MCP Apps (SEP-1865): a small view stored in the database next to the tools it goes with. The
-- host renders ui://chumbo-example/notes in a sandboxed iframe when the model calls
-- mcp.list_notes; its form adds a note through mcp.add_note, an app-only tool (not in
-- tools/list, callable by the view through the host), as the signed-in user under RLS.
-- mcp.clear_notes is the model's only ("visibility": ["model"]): a host refuses it to the view.
-- The view speaks the MCP Apps postMessage protocol (JSON-RPC, ui/initialize) with no library, so
-- it needs no network: its CSP allows no domain at all.

create table public.notes (
  id bigint generated always as identity primary key,
  owner uuid not null default auth.uid(),
  body text not null check (length(body) between 1 and 500),
  created_at timestamptz not null default now()
);
alter table public.notes enable row level security;
create policy "own notes" on public.notes
  using (owner = (select auth.uid())) with check (owner = (select auth.uid()));
grant select, insert, delete on public.notes to authenticated;

create function mcp.list_notes()
  returns jsonb language sql stable set search_path = ''
as $$
  select jsonb_build_object('notes', coalesce(jsonb_agg(jsonb_build_object('id', n.id, 'body', n.body) order by n.id), '[]'))
    from public.notes n
$$;
comment on function mcp.list_notes() is 'Your notes, with a form to add one. @mcp {"title": "Notes"}';

create function mcp.add_note(body text)
  returns jsonb language sql volatile set search_path = ''
as $$
  insert into public.notes (body) values (add_note.body)
  returning jsonb_build_object('id', id, 'body', body)
$$;
comment on function mcp.add_note(text) is
  'Add a note. @mcp {"params": {"body": {"description": "The note.", "minLength": 1, "maxLength": 500}}}';

create function mcp.clear_notes()
  returns jsonb language sql volatile set search_path = ''
as $$
  with d as (delete from public.notes returning 1) select jsonb_build_object('deleted', count(*)) from d
$$;
comment on function mcp.clear_notes() is
  'Delete all your notes. @mcp {"annotations": {"destructiveHint": true}}';

revoke execute on function mcp.list_notes(), mcp.add_note(text), mcp.clear_notes() from public;
grant execute on function mcp.list_notes(), mcp.add_note(text), mcp.clear_notes() to authenticated;

select chumbo.create_app('ui://chumbo-example/notes', 'Notes', $html$<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Notes</title>
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 16px; color: #1f2328; }
  h1 { font-size: 18px; margin: 0 0 12px; }
  ul { padding-left: 20px; }
  form { display: flex; gap: 8px; margin-top: 12px; }
  input { flex: 1; padding: 6px 8px; border: 1px solid #d0d7de; border-radius: 6px; }
  button { padding: 6px 14px; border: 0; border-radius: 6px; background: #1f883d; color: #fff; }
  #status { margin-top: 8px; color: #59636e; min-height: 1.4em; }
</style>
</head>
<body>
<h1>Notes</h1>
<ul id="notes"><li>Waiting for the tool result…</li></ul>
<form id="add">
  <input id="body" name="body" required maxlength="500" placeholder="A new note" autocomplete="off">
  <button id="save" type="submit">Add note</button>
</form>
<div id="status"></div>
<script>
"use strict";
// The MCP Apps protocol (2026-01-26) over postMessage: JSON-RPC with the host, which forwards
// tools/call to the server as the signed-in user.
const pending = new Map();
let nextId = 1;
function send(message) { window.parent.postMessage(Object.assign({ jsonrpc: "2.0" }, message), "*"); }
function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
function show(result) {
  const list = document.getElementById("notes");
  list.replaceChildren();
  const notes = (result && result.structuredContent && result.structuredContent.notes) || [];
  for (const n of notes) {
    const li = document.createElement("li");
    li.textContent = n.body;
    list.append(li);
  }
  if (!notes.length) {
    const li = document.createElement("li");
    li.textContent = "No notes yet.";
    list.append(li);
  }
}
window.addEventListener("message", (event) => {
  if (event.source !== window.parent) return;
  const m = event.data;
  if (!m || m.jsonrpc !== "2.0") return;
  if (m.method === undefined && pending.has(m.id)) {
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (m.error) p.reject(m.error); else p.resolve(m.result);
  } else if (m.method === "ui/notifications/tool-result") {
    show(m.params);
  } else if (m.method !== undefined && m.id !== undefined) {
    send({ id: m.id, result: {} });   // ping, ui/resource-teardown
  }
});
document.getElementById("add").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = document.getElementById("body");
  const status = document.getElementById("status");
  const button = document.getElementById("save");
  button.disabled = true;
  try {
    const result = await request("tools/call", { name: "add_note", arguments: { body: input.value } });
    if (result.isError) throw new Error("the note was not saved");
    const list = await request("tools/call", { name: "list_notes", arguments: {} });
    show(list);
    input.value = "";
    status.textContent = "Saved.";
  } catch (e) {
    status.textContent = "Not saved: " + (e && e.message ? e.message : e);
  } finally {
    button.disabled = false;
  }
});
request("ui/initialize", {
  protocolVersion: "2026-01-26",
  appInfo: { name: "chumbo-example-notes", version: "1.0.0" },
  appCapabilities: {},
}).then(() => send({ method: "ui/notifications/initialized", params: {} }));
</script>
</body>
</html>
$html$, csp => '{"connectDomains": [], "resourceDomains": []}', title => 'Notes',
  description => 'Your notes, and a form to add one.', prefers_border => true);
select chumbo.link_app('ui://chumbo-example/notes', 'mcp.list_notes()');
select chumbo.link_app('ui://chumbo-example/notes', 'mcp.add_note(text)', array['app']);
select chumbo.link_app('ui://chumbo-example/notes', 'mcp.clear_notes()', array['model']);
