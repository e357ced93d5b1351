select bench.touch(:client_id);
