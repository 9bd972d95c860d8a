-- wrk script: process.lua's request, but from many callers: each request carries the next
-- bearer token of a file (one a line), so a benchmark sees as many users as the file has.
--
--   wrk -t2 -c64 -d10s --latency -s Benchmarks/callers.lua URL -- BODY_FILE TOKENS_FILE
--
-- Each thread formats one request per token in init and request() hands them out in turn,
-- so no request is formatted while wrk measures; threads start at different places in
-- the list. (A request() defined at all makes wrk call it for every request, which is why
-- this is a script of its own and process.lua has none.)
dofile("Benchmarks/process.lua")

local process_init = init
local requests = {}
local next_request = 0

function init(args)
   process_init({ args[1] })
   local file, message = io.open(args[2] or "", "rb")
   if not file then
      error("callers.lua: cannot read the tokens file: " .. tostring(message))
   end
   for line in file:lines() do
      if line ~= "" then
         wrk.headers["Authorization"] = "Bearer " .. line
         requests[#requests + 1] = wrk.format()
      end
   end
   file:close()
   if #requests == 0 then
      error("callers.lua: no token in " .. args[2])
   end
   math.randomseed(tonumber(tostring(requests):match("0x(%x+)") or "0", 16) + os.time())
   next_request = math.random(#requests) - 1
end

function request()
   next_request = next_request % #requests + 1
   return requests[next_request]
end
