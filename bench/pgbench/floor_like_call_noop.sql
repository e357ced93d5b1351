select bench.floor_like_noop('1', '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}');
