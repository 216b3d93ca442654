-- wrk 4.1 (LuaJIT) script for the gpuadmit HTTPS load benchmark.
--
-- POSTs the file named by $GPUADMIT_LOAD_BODY (an AdmissionReview) with
-- Content-Type: application/json on every request and, when the run ends,
-- prints ONE machine-readable line:
--
--   WRK_RESULT {"requests":N,"duration_us":N,"bytes":N,"rps":F,
--               "errors":{"connect":N,"read":N,"write":N,"status":N,
--                         "timeout":N,"non2xx":N|null,"total":N},
--               "latency_us":{"p50":N,"p90":N,"p99":N,"p999":N,"max":N,
--                             "mean":F,"stdev":F}}
--
-- errors.status is wrk's own counter (HTTP status > 399, no Lua cost).
-- With GPUADMIT_LOAD_STRICT=1 a response() hook also counts every status
-- outside 200..299 in errors.non2xx (exact, but the hook makes wrk parse every
-- answer in Lua: ~10-15% fewer req/s when client and server share 2 cores);
-- otherwise errors.non2xx is null.
-- errors.total = connect + read + write + timeout + (non2xx if strict, else status).

local body_file = os.getenv("GPUADMIT_LOAD_BODY")
if body_file == nil or body_file == "" then
  error("GPUADMIT_LOAD_BODY must name the request body file")
end
local f = assert(io.open(body_file, "rb"))
local body = f:read("*a")
f:close()
body = body:gsub("%s+$", "") -- drop the file's trailing newline

wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"

-- Thread objects, collected in the main Lua state so done() can read the
-- per-thread counters.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local strict = os.getenv("GPUADMIT_LOAD_STRICT") == "1"

-- Runs in each thread's own Lua state.
non2xx = 0

if strict then
  function response(status, headers, body)
    if status < 200 or status > 299 then
      non2xx = non2xx + 1
    end
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local bad, non2xx_json = e.status, "null"
  if strict then
    bad = 0
    for _, t in ipairs(threads) do
      bad = bad + (t:get("non2xx") or 0)
    end
    non2xx_json = tostring(bad)
  end
  local total = e.connect + e.read + e.write + e.timeout + bad
  local secs = summary.duration / 1e6
  local rps = 0
  if secs > 0 then rps = summary.requests / secs end
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,"rps":%.1f,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"non2xx":%s,"total":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d,' ..
    '"mean":%.1f,"stdev":%.1f}}\n',
    summary.requests, summary.duration, summary.bytes, rps,
    e.connect, e.read, e.write, e.status, e.timeout, non2xx_json, total,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean, latency.stdev))
end
