-- Fixed bug (claim, README "Declaring capabilities": `bytea` -> base64 string): a bytea parameter is
-- advertised as {"type": "string", "contentEncoding": "base64"}, so a client sends base64, but
-- the function receives the base64 TEXT as its bytes: jsonb_to_record types the string with
-- bytea's own input function (hex/escape format), never decoding base64. "3q2+7w==" (the four
-- bytes de ad be ef) arrives as the 8 bytes of the ASCII text. The expected output below is
-- the right behaviour (now fixed) (the bytes the client encoded).
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function mcp.bb_hex(data bytea) returns text language sql stable as $$ select encode(data, 'hex') $$;
grant execute on function mcp.bb_hex(bytea) to authenticated;
select jsonb_path_query_first(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', :'alice'),
         '$.result.tools[*] ? (@.name == "bb_hex").inputSchema.properties.data') as advertised;
select b64, chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
         'params', jsonb_build_object('name', 'bb_hex', 'arguments', jsonb_build_object('data', b64))), :'alice')
         #>> '{result,content,0,text}' as received_hex
  from (values ('3q2+7w=='), ('AAEC'), ('')) v(b64);
rollback;
