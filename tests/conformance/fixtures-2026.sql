-- The MCP 2026-07-28 conformance fixtures, next to the legacy catalogue (fixtures.sql, loaded
-- first). @modelcontextprotocol/conformance@0.2.0-alpha.12 calls these by fixed name in the
-- server-stateless, http-custom-header-server-validation and input-required-result-* scenarios;
-- the behaviour follows the scenario descriptions (dist/index.js) and the TypeScript SDK's
-- test/conformance fixtures.
--
-- Multi round-trip requests (MRTR) are plain SQL: `chumbo.input(key, request)` returns the client's
-- answer, or ends the call as `input_required` asking for it (with an HMAC-protected requestState
-- carrying the answers of earlier rounds). Asking is refused with -32021 when the client did not
-- declare the capability; `chumbo.client_capabilities()` tells what it declared.
--
-- Loaded after fixtures.sql by scripts/load-db.sh (conformance profile) and
-- tests/conformance-2026/run.sh; idempotent.

create schema if not exists mcp;
create schema if not exists conformance;

-- The elicitation forms the scenarios describe.
create or replace function conformance.ask_name(message text default 'What is your name?') returns jsonb
  language sql immutable
  as $$ select jsonb_build_object('method', 'elicitation/create', 'params', jsonb_build_object(
          'message', message,
          'requestedSchema', '{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}'::jsonb)) $$;

create or replace function conformance.ask_sample(prompt text, max_tokens int) returns jsonb
  language sql immutable
  as $$ select jsonb_build_object('method', 'sampling/createMessage', 'params', jsonb_build_object(
          'messages', jsonb_build_array(jsonb_build_object('role', 'user',
                        'content', jsonb_build_object('type', 'text', 'text', prompt))),
          'maxTokens', max_tokens)) $$;

create or replace function conformance.ask_roots() returns jsonb
  language sql immutable
  as $$ select '{"method":"roots/list","params":{}}'::jsonb $$;

-- The text of a sampling answer (CreateMessageResult.content is one block or an array).
create or replace function conformance.sample_text(answer jsonb) returns text
  language sql immutable
  as $$ select coalesce(answer #>> '{content,text}', answer #>> '{content,0,text}', '(non-text content)') $$;

------------------------------------------------------------------------------------------------
-- MRTR tools (input-required-result-* scenarios)
------------------------------------------------------------------------------------------------

-- A1: one elicitation. Wrong or missing keys on the retry are asked again (not an error).
create or replace function mcp.test_input_required_result_elicitation() returns text
  language plpgsql volatile
  as $$
  declare
    answer jsonb := chumbo.input('user_name', conformance.ask_name());
  begin
    return format('Hello, %s!', coalesce(answer #>> '{content,name}', 'stranger'));
  end
  $$;
comment on function mcp.test_input_required_result_elicitation() is
  'Round-trips one elicitation input request (MRTR)';

create or replace function mcp.test_input_required_result_sampling() returns text
  language plpgsql volatile
  as $$
  declare
    answer jsonb := chumbo.input('capital_question', conformance.ask_sample('What is the capital of France?', 100));
  begin
    return 'Sampling response: ' || conformance.sample_text(answer);
  end
  $$;
comment on function mcp.test_input_required_result_sampling() is
  'Round-trips one sampling input request (MRTR)';

create or replace function mcp.test_input_required_result_list_roots() returns text
  language plpgsql volatile
  as $$
  declare
    answer jsonb := chumbo.input('client_roots', conformance.ask_roots());
  begin
    return format('Client roots (%s): %s', jsonb_array_length(coalesce(answer -> 'roots', '[]')),
                  coalesce((select string_agg(r ->> 'uri', ', ') from jsonb_array_elements(answer -> 'roots') r), ''));
  end
  $$;
comment on function mcp.test_input_required_result_list_roots() is
  'Round-trips one roots/list input request (MRTR)';

-- chumbo always issues a requestState with input_required; the retry is accepted only when that
-- state verifies (HMAC, caller, tool, arguments, expiry, one use), so reaching the return means
-- the state round-tripped.
create or replace function mcp.test_input_required_result_request_state() returns text
  language plpgsql volatile
  as $$
  declare
    answer jsonb := chumbo.input('confirm', jsonb_build_object('method', 'elicitation/create', 'params', jsonb_build_object(
      'message', 'Please confirm',
      'requestedSchema', '{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}'::jsonb)));
  begin
    return format('state-ok: confirmed=%s', coalesce(answer #>> '{content,ok}', 'false'));
  end
  $$;
comment on function mcp.test_input_required_result_request_state() is
  'Round-trips requestState through an input request (MRTR)';

-- Three input requests in ONE round: chumbo.inputs asks for all that are missing at once.
create or replace function mcp.test_input_required_result_multiple_inputs() returns text
  language plpgsql volatile
  as $$
  declare
    answers jsonb := chumbo.inputs(jsonb_build_object(
      'user_name', conformance.ask_name(),
      'greeting', conformance.ask_sample('Generate a greeting', 50),
      'client_roots', conformance.ask_roots()));
  begin
    return format('All inputs received: name=%s, greeting=%s, roots=%s',
                  answers #>> '{user_name,content,name}', conformance.sample_text(answers -> 'greeting'),
                  jsonb_array_length(coalesce(answers #> '{client_roots,roots}', '[]')));
  end
  $$;
comment on function mcp.test_input_required_result_multiple_inputs() is
  'Asks for elicitation, sampling and roots input in one round (MRTR)';

-- Three rounds: step1's answer travels in the requestState of round 2.
create or replace function mcp.test_input_required_result_multi_round() returns text
  language plpgsql volatile
  as $$
  declare
    a jsonb := chumbo.input('step1', conformance.ask_name('Step 1: What is your name?'));
    b jsonb := chumbo.input('step2', jsonb_build_object('method', 'elicitation/create', 'params', jsonb_build_object(
      'message', 'Step 2: What is your favorite color?',
      'requestedSchema', '{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}'::jsonb)));
  begin
    return format('%s likes %s', a #>> '{content,name}', b #>> '{content,color}');
  end
  $$;
comment on function mcp.test_input_required_result_multi_round() is
  'A three-round input flow with an evolving requestState (MRTR)';

-- The suite appends to the requestState; chumbo rejects it (-32602, integrity check).
create or replace function mcp.test_input_required_result_tampered_state() returns text
  language plpgsql volatile
  as $$
  declare
    answer jsonb := chumbo.input('confirm', jsonb_build_object('method', 'elicitation/create', 'params', jsonb_build_object(
      'message', 'Confirm action',
      'requestedSchema', '{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}'::jsonb)));
  begin
    return format('Signed state verified (ok=%s)', coalesce(answer #>> '{content,ok}', 'false'));
  end
  $$;
comment on function mcp.test_input_required_result_tampered_state() is
  'Issues an integrity-protected requestState (MRTR)';

-- Only asks for what the client declared (sampling always first, then elicitation if declared).
create or replace function mcp.test_input_required_result_capabilities() returns text
  language plpgsql volatile
  as $$
  declare
    caps jsonb := chumbo.client_capabilities();
    sample jsonb;
    name jsonb;
  begin
    if caps ? 'sampling' then
      sample := chumbo.input('capital_question', conformance.ask_sample('What is the capital of France?', 100));
    end if;
    if caps ? 'elicitation' then
      name := chumbo.input('user_name', conformance.ask_name());
    end if;
    if sample is null and name is null then
      return 'The client declared neither sampling nor elicitation: nothing to ask.';
    end if;
    return format('Answers: sampling=%s, name=%s', conformance.sample_text(sample), name #>> '{content,name}');
  end
  $$;
comment on function mcp.test_input_required_result_capabilities() is
  'Asks only for input the client declared a capability for (MRTR)';

-- The prompt flavour (input-required-result-non-tool-request).
create or replace function mcp.test_input_required_result_prompt() returns text
  language plpgsql volatile
  as $$
  declare
    answer jsonb := chumbo.input('user_context', jsonb_build_object('method', 'elicitation/create', 'params', jsonb_build_object(
      'message', 'What context should the prompt use?',
      'requestedSchema', '{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}'::jsonb)));
  begin
    return format('Use this context: %s', answer #>> '{content,context}');
  end
  $$;
comment on function mcp.test_input_required_result_prompt() is
  'A prompt that asks for context first (MRTR) @mcp {"prompt": true, "title": "Prompt Requiring Input"}';

------------------------------------------------------------------------------------------------
-- server-stateless diagnostics
------------------------------------------------------------------------------------------------

-- Needs sampling; without the declared capability chumbo answers -32021 (HTTP 400).
create or replace function mcp.test_missing_capability() returns text
  language plpgsql volatile
  as $$
  declare
    answer jsonb := chumbo.input('sample', conformance.ask_sample('Reply with any short text.', 50));
  begin
    return 'Sampling input received: ' || conformance.sample_text(answer);
  end
  $$;
comment on function mcp.test_missing_capability() is
  'Asks for sampling input: a client that did not declare sampling gets -32021';

-- Elicitation over a possibly streamed response: the input request travels in the
-- input_required result, never as an independent server-to-client request.
create or replace function mcp.test_streaming_elicitation() returns text
  language plpgsql volatile
  as $$
  declare
    answer jsonb := chumbo.input('user_name', conformance.ask_name());
  begin
    return format('Streaming elicitation completed (name: %s)', answer #>> '{content,name}');
  end
  $$;
comment on function mcp.test_streaming_elicitation() is
  'Elicitation flow whose response stream carries no independent requests';

-- Logs unconditionally; chumbo delivers notifications/message only when the request carried
-- _meta io.modelcontextprotocol/logLevel (and at or above it).
create or replace function mcp.test_logging_tool() returns text
  language plpgsql volatile
  as $$
  begin
    perform chumbo.log('info', to_jsonb('Logging fixture executed'::text), 'conformance');
    return 'Logging fixture executed.';
  end
  $$;
comment on function mcp.test_logging_tool() is
  'Emits a log message (delivered only when the request set a log level)';

-- The list-changed hooks really change capability metadata: they re-COMMENT a tool / a prompt,
-- which fires chumbo's event trigger (pg_notify on chumbo_capabilities) that the edge turns into
-- list-changed notifications on open subscriptions/listen streams. COMMENT needs the owner, so
-- these are SECURITY DEFINER ("privileged") with a fixed search_path.
create or replace function mcp.test_trigger_tool_change() returns text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  as $$
  declare
    f regprocedure := 'mcp.test_trigger_tool_change()'::regprocedure;
  begin
    execute format('comment on function %s is %L', f, obj_description(f, 'pg_proc'));
    return 'Tool metadata changed (re-commented test_trigger_tool_change)';
  end
  $$;
comment on function mcp.test_trigger_tool_change() is
  'Changes a tool''s metadata, so listen streams get notifications/tools/list_changed @mcp {"privileged": true}';

create or replace function mcp.test_trigger_prompt_change() returns text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  as $$
  declare
    f regprocedure := 'mcp.test_input_required_result_prompt()'::regprocedure;
  begin
    execute format('comment on function %s is %L', f, obj_description(f, 'pg_proc'));
    return 'Prompt metadata changed (re-commented test_input_required_result_prompt)';
  end
  $$;
comment on function mcp.test_trigger_prompt_change() is
  'Changes a prompt''s metadata, so listen streams get notifications/prompts/list_changed @mcp {"privileged": true}';

-- chumbo refuses a privileged capability owned by a superuser (each call would run as one): the
-- hooks, and the prompt one of them re-comments, belong to a plain role that may only do that.
do $$
begin
  if not exists (select from pg_roles where rolname = 'conformance_fixture_owner') then
    create role conformance_fixture_owner nologin;
  end if;
end $$;
grant usage, create on schema mcp to conformance_fixture_owner;
alter function mcp.test_trigger_tool_change() owner to conformance_fixture_owner;
alter function mcp.test_trigger_prompt_change() owner to conformance_fixture_owner;
alter function mcp.test_input_required_result_prompt() owner to conformance_fixture_owner;
revoke create on schema mcp from conformance_fixture_owner;

------------------------------------------------------------------------------------------------
-- http-custom-header-server-validation: an argument mirrored into the Mcp-Param-Region header
------------------------------------------------------------------------------------------------

create or replace function mcp.test_x_mcp_header(region text) returns text
  language sql stable
  as $$ select format('Region: %s', region) $$;
comment on function mcp.test_x_mcp_header(text) is
  'Echoes the region, which clients also send as the Mcp-Param-Region header @mcp {"params": {"region": {"description": "A region name", "x-mcp-header": "Region"}}}';

------------------------------------------------------------------------------------------------
-- tasks-* (the io.modelcontextprotocol/tasks extension, SEP-2663): the fixture tools the
-- scenarios name. A tool becomes a task by its @mcp "task" key; "task_starts_in_request" runs it
-- in the request until chumbo.continue_as_task() (so input is asked, and a quick result answered,
-- there).
------------------------------------------------------------------------------------------------

create or replace function mcp.greet(name text) returns text
  language sql immutable
  as $$ select format('Hello, %s!', name) $$;
comment on function mcp.greet(text) is 'Greets by name (never a task)';

create or replace function mcp.slow_compute(seconds integer, label text default null) returns text
  language plpgsql volatile
  as $$
  begin
    if seconds > 0 then
      perform chumbo.continue_as_task();
      perform pg_sleep(seconds);
    end if;
    return format('Computed %s after %s s', coalesce(label, 'a value'), seconds);
  end
  $$;
comment on function mcp.slow_compute(integer, text) is
  'Sleeps for seconds, then answers (a task when the client declared the extension, unless seconds is 0) @mcp {"task": "optional", "task_starts_in_request": true, "timeoutMs": 120000}';

create or replace function mcp.failing_job() returns text
  language plpgsql volatile
  as $$
  begin
    perform pg_sleep(1);
    raise exception 'failing_job failed, as it always does';
  end
  $$;
comment on function mcp.failing_job() is
  'Fails with a tool error after a second (only as a task) @mcp {"task": "required"}';

create or replace function mcp.protocol_error_job() returns text
  language plpgsql volatile
  as $$
  begin
    perform chumbo.jsonrpc_error(-32603, 'protocol_error_job ends with a protocol error, as it always does');
    return 'unreachable';
  end
  $$;
comment on function mcp.protocol_error_job() is
  'Ends with a JSON-RPC error (a failed task) @mcp {"task": "optional"}';

create or replace function mcp.confirm_delete(filename text) returns text
  language plpgsql volatile
  as $$
  declare
    answer jsonb := chumbo.input('confirm', jsonb_build_object('method', 'elicitation/create', 'params', jsonb_build_object(
      'message', format('Delete %s?', filename),
      'requestedSchema', '{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}'::jsonb)));
  begin
    if answer ->> 'action' = 'accept' and (answer #>> '{content,confirm}')::boolean then
      return format('Deleted %s', filename);
    end if;
    return format('Kept %s', filename);
  end
  $$;
comment on function mcp.confirm_delete(text) is
  'Asks the user to confirm, then deletes (pretends to) @mcp {"task": "optional"}';

create or replace function mcp.multi_input() returns text
  language plpgsql volatile
  as $$
  declare
    answers jsonb := chumbo.inputs(jsonb_build_object(
      'name', conformance.ask_name(),
      'confirm', jsonb_build_object('method', 'elicitation/create', 'params', jsonb_build_object(
        'message', 'Go ahead?',
        'requestedSchema', '{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}'::jsonb))));
  begin
    return format('Got both answers: %s and %s', answers #>> '{name,content,name}', answers #>> '{confirm,content,confirm}');
  end
  $$;
comment on function mcp.multi_input() is
  'Asks two questions at once @mcp {"task": "optional"}';

create or replace function mcp.test_tool_with_task() returns text
  language plpgsql volatile
  as $$
  declare
    answer jsonb := chumbo.input('user_name', conformance.ask_name());
  begin
    perform chumbo.continue_as_task();
    perform pg_sleep(0.5);
    return format('Hello, %s! (answered by a task)', answer #>> '{content,name}');
  end
  $$;
comment on function mcp.test_tool_with_task() is
  'Asks for a name in the request, then goes on as a task @mcp {"task": "required", "task_starts_in_request": true}';

------------------------------------------------------------------------------------------------
-- Access (public mode runs every capability as anon)
------------------------------------------------------------------------------------------------

revoke execute on all functions in schema mcp, conformance from public;
grant usage on schema mcp, conformance to anon, authenticated;
grant execute on all functions in schema mcp, conformance to anon, authenticated;

------------------------------------------------------------------------------------------------
-- sep-2640-skills-*: skills the suite discovers through skills/list (public mode: anon). chumbo's
-- own skill, served to anon here only (the example app serves it to authenticated).
------------------------------------------------------------------------------------------------

select chumbo.grant_skill('chumbo-builder', 'anon');
