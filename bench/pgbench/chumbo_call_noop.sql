select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bench_noop","arguments":{}}}', '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}');
