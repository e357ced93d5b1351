-- wrk script: one MCP POST (stateless Streamable HTTP) per request, and a check of every response.
-- Environment (bench/run.sh sets it):
--   MCP_TOKEN   bearer token of the caller
--   MCP_BODY    the JSON-RPC request
--   MCP_EXPECT  text every good response contains (the caller's organization)
--   MCP_FORBID  text no response may contain (the other organization)
-- Prints RESULT key=value ... (requests, rps, latency percentiles in µs, good/bad) and QUANTILES
-- (the 0.1st ... 100th percentile in µs, so bench/report.py can merge the rounds of a point).
wrk.method = "POST"
wrk.body = os.getenv("MCP_BODY")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("MCP_TOKEN")

local expect = os.getenv("MCP_EXPECT")
local forbid = os.getenv("MCP_FORBID")
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  good, bad, sample = 0, 0, ""
end

function response(status, headers, body)
  if status == 200 and body:find(expect, 1, true) and not body:find(forbid, 1, true)
     and not body:find('"isError":true', 1, true) and not body:find('"error":', 1, true) then
    good = good + 1
  else
    bad = bad + 1
    if sample == "" then sample = status .. " " .. body:sub(1, 160):gsub("%s", " ") end
  end
end

function done(summary, latency, requests)
  local g, b, s = 0, 0, ""
  for _, t in ipairs(threads) do
    g = g + t:get("good")
    b = b + t:get("bad")
    if s == "" then s = t:get("sample") or "" end
  end
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d rps=%.2f p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
    "socket_errors=%d non2xx=%d good=%d bad=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect + e.read + e.write + e.timeout, e.status, g, b))
  local q = {}
  for i = 1, 1000 do q[i] = string.format("%d", latency:percentile(i / 10)) end
  io.write("QUANTILES " .. table.concat(q, " ") .. "\n")
  if s ~= "" then io.write("BADSAMPLE " .. s .. "\n") end
end
