select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"resources/list"}', '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}');
select chumbo.handle('{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"app://orgs/mine"}}', '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}');
