-- wrk script: POST a JSON body read from a file, optionally with a bearer token.
--
--   wrk -t2 -c64 -d10s --latency -s Benchmarks/process.lua URL -- BODY_FILE [TOKEN]
--
-- Without script arguments it reads BENCH_BODY_FILE and BENCH_TOKEN from the environment.
-- The request is built once per thread (wrk.init formats it after init), so the script
-- costs nothing per request; no response() is defined, so wrk does not parse bodies.
-- done() adds the percentiles wrk's --latency table leaves out (p99.9), in microseconds.
-- wrk itself reports statuses above 399 as "Non-2xx or 3xx responses".

local function read_file(path)
   local file, message = io.open(path, "rb")
   if not file then
      error("process.lua: cannot read body file: " .. tostring(message))
   end
   local text = file:read("*a")
   file:close()
   return text
end

function init(args)
   local path = args[1] or os.getenv("BENCH_BODY_FILE")
   if not path or path == "" then
      error("process.lua: pass the JSON body file after --, or set BENCH_BODY_FILE")
   end
   local token = args[2] or os.getenv("BENCH_TOKEN")

   wrk.method = "POST"
   wrk.body = read_file(path)
   wrk.headers["Content-Type"] = "application/json"
   if token and token ~= "" then
      wrk.headers["Authorization"] = "Bearer " .. token
   end
end

function done(summary, latency, requests)
   io.write(string.format("p99.9_us %d\n", latency:percentile(99.9)))
   io.write(string.format("max_us %d\n", latency.max))
end
