-- The MCP conformance fixture catalogue, written as plain SQL functions in schema mcp.
--
-- The official conformance suite (@modelcontextprotocol/conformance, server mode) acts as an MCP
-- client and calls capabilities by fixed names: the catalogue of the reference "everything"
-- server. This file declares that catalogue the way any chumbo user declares capabilities (a
-- function, a COMMENT, an optional `@mcp {...}` tail), so it doubles as proof that SQL can express
-- every MCP content type: text, image, audio, embedded resources, mixed content, log and progress
-- notifications, errors, text/binary/templated resources, prompts with arguments, embedded
-- resources and images, and argument completion.
--
-- Prerequisites (run as a superuser or the database owner): the Supabase-compatible roles
-- (supabase/compat/roles.sql) and `create extension chumbo`. Loading is idempotent.
-- The file switches the database to public mode (anonymous access, rate-limited), because the
-- suite sends no credentials; so every capability here is executable by anon.
--
-- Loaded by tests/conformance/run.sh (database chumbo_conformance) and by
-- `CHUMBO_PROFILE=conformance make run` (load with psql -v ON_ERROR_STOP=1 -f).

create schema if not exists mcp;

-- Helpers that are not capabilities live outside schema mcp (anything executable in mcp would be
-- listed as a tool).
create schema if not exists conformance;
comment on schema conformance is 'Helpers for the MCP conformance fixtures (tests/conformance/fixtures.sql)';

-- A 1x1 red RGBA PNG (70 bytes).
create or replace function conformance.red_pixel_png() returns bytea
  language sql immutable parallel safe
  as $$ select decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP4z8DwHwAFAAH/VscvDQAAAABJRU5ErkJggg==', 'base64') $$;

-- A minimal WAV file: PCM, mono, 8 kHz, 16 bit, four samples of silence (52 bytes).
create or replace function conformance.silence_wav() returns bytea
  language sql immutable parallel safe
  as $$ select decode('UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQgAAAAAAAAAAAAAAA==', 'base64') $$;

-- Completion source for test_prompt_with_arguments.arg2 (signature required by chumbo:
-- (value text) returns setof text, run as the caller).
create or replace function conformance.complete_arg2(value text) returns setof text
  language sql stable
  as $$
    select v from unnest(array['testValue2', 'world', 'wonder', 'workshop']) as v
    where v like replace(replace(replace(coalesce(value, ''), '\', '\\'), '%', '\%'), '_', '\_') || '%'
    order by v
  $$;

------------------------------------------------------------------------------------------------
-- Tools
------------------------------------------------------------------------------------------------

-- Scalar text result: chumbo answers with one text content block.
create or replace function mcp.test_simple_text() returns text
  language sql stable
  as $$ select 'This is a simple text response for testing.' $$;
comment on function mcp.test_simple_text() is
  'Tests simple text content response';

create or replace function mcp.test_image_content() returns chumbo.tool_result
  language sql stable
  as $$
    select chumbo.tool_result(jsonb_build_array(
      chumbo.content_image(conformance.red_pixel_png(), 'image/png')))
  $$;
comment on function mcp.test_image_content() is
  'Tests image content response';

create or replace function mcp.test_audio_content() returns chumbo.tool_result
  language sql stable
  as $$
    select chumbo.tool_result(jsonb_build_array(
      chumbo.content_audio(conformance.silence_wav(), 'audio/wav')))
  $$;
comment on function mcp.test_audio_content() is
  'Tests audio content response';

create or replace function mcp.test_embedded_resource() returns chumbo.tool_result
  language sql stable
  as $$
    select chumbo.tool_result(jsonb_build_array(
      chumbo.content_resource('test://embedded-resource',
                              'This is an embedded resource content.',
                              'text/plain')))
  $$;
comment on function mcp.test_embedded_resource() is
  'Tests embedded resource content response';

create or replace function mcp.test_multiple_content_types() returns chumbo.tool_result
  language sql stable
  as $$
    select chumbo.tool_result(jsonb_build_array(
      chumbo.content_text('Multiple content types test:'),
      chumbo.content_image(conformance.red_pixel_png(), 'image/png'),
      chumbo.content_resource('test://mixed-content-resource',
                              jsonb_build_object('test', 'data', 'value', 123)::text,
                              'application/json')))
  $$;
comment on function mcp.test_multiple_content_types() is
  'Tests response with multiple content types (text, image, resource)';

-- Three info-level log notifications, ~50 ms apart, then the result. chumbo returns the queued
-- notifications as events and the edge frames the reply as SSE.
create or replace function mcp.test_tool_with_logging() returns text
  language plpgsql volatile
  as $$
  begin
    perform chumbo.log('info', to_jsonb('Tool execution started'::text), 'conformance');
    perform pg_sleep(0.05);
    perform chumbo.log('info', to_jsonb('Tool processing data'::text), 'conformance');
    perform pg_sleep(0.05);
    perform chumbo.log('info', to_jsonb('Tool execution completed'::text), 'conformance');
    return 'Tool with logging executed successfully';
  end
  $$;
comment on function mcp.test_tool_with_logging() is
  'Tests tool that emits log messages during execution';

-- Progress 0/100, 50/100, 100/100 (delivered only when the request carried a progressToken).
create or replace function mcp.test_tool_with_progress() returns text
  language plpgsql volatile
  as $$
  declare
    step int;
  begin
    foreach step in array array[0, 50, 100] loop
      if step > 0 then
        perform pg_sleep(0.05);
      end if;
      perform chumbo.progress(step, 100, format('Completed step %s of %s', step, 100));
    end loop;
    return 'Progress reported: 0, 50 and 100 of 100';
  end
  $$;
comment on function mcp.test_tool_with_progress() is
  'Tests tool that reports progress notifications';

-- An exception becomes an isError result whose text is the message.
create or replace function mcp.test_error_handling() returns text
  language plpgsql volatile
  as $$
  begin
    raise exception 'This tool intentionally returns an error for testing';
  end
  $$;
comment on function mcp.test_error_handling() is
  'Tests error response handling';

-- The reference server closes the SSE stream mid-call and delivers the result after the client
-- reconnects (SEP-1699). A stateless server has nothing to resume from, so it answers at once;
-- the server-sse-polling scenario then scores the JSON reply as informational.
create or replace function mcp.test_reconnection() returns text
  language sql stable
  as $$ select 'Reconnection test completed successfully. This stateless server answers in the same response, so no reconnection was needed.' $$;
comment on function mcp.test_reconnection() is
  'Tests SSE stream disconnection and client reconnection (SEP-1699). This stateless server never closes a stream mid-call: the result comes in the same response.';

-- Server->client requests. On the legacy wire (2024-11-05 .. 2025-11-25) a tool can only ask the
-- client for sampling or elicitation over a session's SSE stream and receive the client's reply
-- as a separate POST; chumbo is stateless (no Mcp-Session-Id), so these tools can only say so.
-- They are the scenarios listed in tests/conformance/expected-failures.yml.
create or replace function mcp.test_sampling(prompt text) returns text
  language plpgsql volatile
  as $$
  begin
    raise exception 'Sampling not supported: the server would have to send sampling/createMessage with your prompt (%) and wait for the reply, which needs a session; this server is stateless on the legacy protocol', prompt;
  end
  $$;
comment on function mcp.test_sampling(text) is
  'Tests server-initiated sampling (LLM completion request) @mcp {"params": {"prompt": {"description": "The prompt to send to the LLM"}}}';

create or replace function mcp.test_elicitation(message text) returns text
  language plpgsql volatile
  as $$
  begin
    raise exception 'Elicitation not supported: the server would have to send elicitation/create (%) and wait for the reply, which needs a session; this server is stateless on the legacy protocol', message;
  end
  $$;
comment on function mcp.test_elicitation(text) is
  'Tests server-initiated elicitation (user input request) @mcp {"params": {"message": {"description": "The message to show the user"}}}';

create or replace function mcp.test_elicitation_sep1034_defaults() returns text
  language plpgsql volatile
  as $$
  begin
    raise exception 'Elicitation not supported: the form with defaults (name "John Doe", age 30, score 95.5, status "active", verified true) needs elicitation/create, which needs a session; this server is stateless on the legacy protocol';
  end
  $$;
comment on function mcp.test_elicitation_sep1034_defaults() is
  'Tests elicitation with default values per SEP-1034';

create or replace function mcp.test_elicitation_sep1330_enums() returns text
  language plpgsql volatile
  as $$
  begin
    raise exception 'Elicitation not supported: the enum form (untitled/titled single and multi select, legacy enumNames) needs elicitation/create, which needs a session; this server is stateless on the legacy protocol';
  end
  $$;
comment on function mcp.test_elicitation_sep1330_enums() is
  'Tests elicitation with enum schema improvements per SEP-1330';

-- SEP-1613: the listed inputSchema must keep $schema, $defs and additionalProperties. The
-- generated schema (name: string, address: any) is replaced by an explicit JSON Schema 2020-12
-- document whose properties are exactly the function's optional parameters.
drop function if exists mcp.json_schema_2020_12_tool(text, jsonb);
create or replace function mcp.json_schema_2020_12_tool(name text default null, address jsonb default null,
    "contactMethod" text default null, phone text default null, email text default null)
  returns text
  language sql stable
  as $$
    select 'JSON Schema 2020-12 tool called with: '
           || jsonb_strip_nulls(jsonb_build_object('name', name, 'address', address, 'contactMethod', "contactMethod",
                                                   'phone', phone, 'email', email))::text
  $$;
comment on function mcp.json_schema_2020_12_tool(text, jsonb, text, text, text) is $c$Tool with JSON Schema 2020-12 features (SEP-1613, SEP-2106) @mcp {
  "inputSchema": {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
      "address": {
        "$anchor": "addressDef",
        "type": "object",
        "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
      }
    },
    "properties": {
      "name": {"type": "string"},
      "address": {"$ref": "#/$defs/address"},
      "contactMethod": {"type": "string", "enum": ["phone", "email"]},
      "phone": {"type": "string"},
      "email": {"type": "string"}
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": false
  }
}$c$;

------------------------------------------------------------------------------------------------
-- Resources
------------------------------------------------------------------------------------------------

-- text -> text contents with the declared mimeType.
create or replace function mcp.static_text() returns text
  language sql stable
  as $$ select 'This is the content of the static text resource.' $$;
comment on function mcp.static_text() is
  'A static text resource for testing @mcp {"resource": "test://static-text", "name": "static-text", "title": "Static Text Resource", "mimeType": "text/plain"}';

-- bytea -> blob contents (base64).
create or replace function mcp.static_binary() returns bytea
  language sql stable
  as $$ select conformance.red_pixel_png() $$;
comment on function mcp.static_binary() is
  'A static binary resource (image) for testing @mcp {"resource": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource", "mimeType": "image/png"}';

-- RFC 6570 level-1 template: {id} binds the parameter id; jsonb -> JSON text, application/json.
create or replace function mcp.template_data(id text) returns jsonb
  language sql stable
  as $$ select jsonb_build_object('id', id, 'templateTest', true, 'data', 'Data for ID: ' || id) $$;
comment on function mcp.template_data(text) is
  'A resource template with parameter substitution @mcp {"resource": "test://template/{id}/data", "name": "template", "title": "Resource Template", "mimeType": "application/json"}';

-- The resource the suite subscribes to and unsubscribes from.
create or replace function mcp.watched_resource() returns text
  language sql stable
  as $$ select 'Watched resource content' $$;
comment on function mcp.watched_resource() is
  'A resource that clients may subscribe to @mcp {"resource": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource", "mimeType": "text/plain"}';

------------------------------------------------------------------------------------------------
-- Prompts
------------------------------------------------------------------------------------------------

-- text -> one user message.
create or replace function mcp.test_simple_prompt() returns text
  language sql stable
  as $$ select 'This is a simple prompt for testing.' $$;
comment on function mcp.test_simple_prompt() is
  'A simple prompt without arguments @mcp {"prompt": true, "title": "Simple Test Prompt"}';

-- Parameters without defaults are required prompt arguments. Completion: arg1 from a static
-- list, arg2 from a SQL function.
create or replace function mcp.test_prompt_with_arguments(arg1 text, arg2 text) returns text
  language sql stable
  as $$ select format('Prompt with arguments: arg1=''%s'', arg2=''%s''', arg1, arg2) $$;
comment on function mcp.test_prompt_with_arguments(text, text) is
  'A prompt with required arguments @mcp {"prompt": true, "title": "Prompt With Arguments", "params": {"arg1": {"description": "First test argument"}, "arg2": {"description": "Second test argument"}}, "completions": {"arg1": ["paris", "park", "party", "testValue1"], "arg2": "conformance.complete_arg2"}}';

-- jsonb array of chumbo.message(...) -> the messages as given.
create or replace function mcp.test_prompt_with_embedded_resource("resourceUri" text) returns jsonb
  language sql stable
  as $$
    select jsonb_build_array(
      chumbo.message('user', chumbo.content_resource("resourceUri",
                                                      'Embedded resource content for testing.',
                                                      'text/plain')),
      chumbo.message('user', chumbo.content_text('Please process the embedded resource above.')))
  $$;
comment on function mcp.test_prompt_with_embedded_resource(text) is
  'A prompt that includes an embedded resource @mcp {"prompt": true, "title": "Prompt With Embedded Resource", "params": {"resourceUri": {"description": "URI of the resource to embed"}}}';

create or replace function mcp.test_prompt_with_image() returns jsonb
  language sql stable
  as $$
    select jsonb_build_array(
      chumbo.message('user', chumbo.content_image(conformance.red_pixel_png(), 'image/png')),
      chumbo.message('user', chumbo.content_text('Please analyze the image above.')))
  $$;
comment on function mcp.test_prompt_with_image() is
  'A prompt that includes image content @mcp {"prompt": true, "title": "Prompt With Image"}';

------------------------------------------------------------------------------------------------
-- Access: public mode runs every capability as anon.
------------------------------------------------------------------------------------------------

-- Functions are executable by PUBLIC by default; grant exactly the request roles instead.
revoke execute on all functions in schema mcp, conformance from public;
grant usage on schema mcp, conformance to anon, authenticated;
grant execute on all functions in schema mcp, conformance to anon, authenticated;

do $$ begin perform chumbo.configure('{"auth_mode": "public"}'); end $$;
