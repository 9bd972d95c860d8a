-- wrk script: process.lua's request, formatted for every request, with a fresh
-- Idempotency-Key on each when the second argument is `keyed`:
--
--   wrk -t2 -c64 -d10s --latency -s Benchmarks/idempotency.lua URL -- BODY_FILE keyed|plain
--
-- Both modes format each request in request(), so the client's work is alike and only the
-- field differs. A key is the thread's random prefix and a counter: unique across threads,
-- runs and rounds, so every keyed request is a first one (none is replayed).
dofile("Benchmarks/process.lua")

local process_init = init
local keyed = false
local prefix = ""
local counter = 0

function init(args)
   process_init({ args[1] })
   keyed = args[2] == "keyed"
   math.randomseed(tonumber(tostring({}):match("0x(%x+)") or "0", 16) + os.time())
   prefix = string.format("bench-%d-%08x%08x-", os.time(), math.random(0, 0x7fffffff), math.random(0, 0x7fffffff))
end

function request()
   counter = counter + 1
   if keyed then
      wrk.headers["Idempotency-Key"] = prefix .. counter
   end
   return wrk.format()
end
