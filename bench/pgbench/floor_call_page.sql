select bench.floor_list_projects('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}', 'archived');
