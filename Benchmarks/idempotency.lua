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
local threads = 0

-- Runs in wrk's main state once per thread: each thread's own number, since the threads'
-- states are alike (the same addresses, the same clock) and would make the same keys.
function setup(thread)
   threads = threads + 1
   thread:set("thread_number", threads)
end

function init(args)
   process_init({ args[1] })
   keyed = args[2] == "keyed"
   local number = thread_number or 0
   math.randomseed(os.time() * 1000 + number)
   prefix = string.format("bench-%d-%d-%08x-", os.time(), number, math.random(0, 0x7fffffff))
end

function request()
   counter = counter + 1
   if keyed then
      wrk.headers["Idempotency-Key"] = prefix .. counter
   end
   return wrk.format()
end
