/// The Lua the shared budgets run: a reservation in all of a request's budgets at once, and
/// its settlement, each one atomic script on the server's clock (`TIME`), so the budgets of
/// every instance on one Redis are the same sums and a day or a month ends at the same instant
/// for all of them.
///
/// A budget's counter for one period is a hash `<prefix>:<period id>` (`s`: used by requests
/// that ended; `f`: held by requests running; `h:<hold>`: each running request's reservation)
/// and a sorted set `<prefix>:<period id>:z` of the holds by when they expire. A hold past its
/// time belongs to a request that cannot be running (its instance died): its reservation is
/// counted as used, the call having perhaps been made.
enum RedisBudgetScripts {
    /// The shared helpers: the period a local day falls in, and the seconds to its end.
    private static let calendar = """
        local function civil(days)
          local z = days + 719468
          local era = math.floor(z / 146097)
          local doe = z - era * 146097
          local yoe = doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)
          yoe = math.floor(yoe / 365)
          local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
          local mp = math.floor((5 * doy + 2) / 153)
          local m = mp < 10 and mp + 3 or mp - 9
          local y = yoe + era * 400
          if m <= 2 then y = y + 1 end
          return y, m
        end
        local function fromCivil(y, m)
          if m <= 2 then y = y - 1 end
          local era = math.floor(y / 400)
          local yoe = y - era * 400
          local mp = m > 2 and m - 3 or m + 9
          local doy = math.floor((153 * mp + 2) / 5)
          local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
          return era * 146097 + doe - 719468
        end
        local function period(kind, localSeconds)
          local day = math.floor(localSeconds / 86400)
          if kind == 'd' then return day end
          local y, m = civil(day)
          return y * 12 + m - 1
        end
        local function toEnd(kind, localSeconds)
          local day = math.floor(localSeconds / 86400)
          if kind == 'd' then return (day + 1) * 86400 - localSeconds end
          local y, m = civil(day)
          if m == 12 then y = y + 1; m = 1 else m = m + 1 end
          return fromCivil(y, m) * 86400 - localSeconds
        end
        """

    /// A request's reservation, all or nothing.
    static let reserve =
        calendar + """
            -- KEYS: each budget's counter prefix
            -- ARGV[1] the calendar's offset (s)   ARGV[2] the hold's id   ARGV[3] the hold's time to live (ms)
            -- ARGV[4] worst tokens   ARGV[5] worst micro-units
            -- then for each key, three by three: period ('d' or 'm'), unit ('t' or 'm'), the budget's amount
            -- Returns {1, then for each key: its period id, what is left of it once this hold is taken out,
            -- seconds to the period's end} or {0, index of the refusing key (1-based), retry-after s}.
            local time = redis.call('TIME')
            local seconds = tonumber(time[1])
            local now = seconds * 1000 + math.floor(tonumber(time[2]) / 1000)
            local localSeconds = seconds + tonumber(ARGV[1])
            local id, ttl = ARGV[2], tonumber(ARGV[3])
            local worstTokens, worstMicros = tonumber(ARGV[4]), tonumber(ARGV[5])
            local ids, counters, worsts, rooms, ends = {}, {}, {}, {}, {}
            for i = 1, #KEYS do
              local base = 5 + 3 * (i - 1)
              local kind, unit, amount = ARGV[base + 1], ARGV[base + 2], tonumber(ARGV[base + 3])
              local pid = period(kind, localSeconds)
              local counter = KEYS[i] .. ':' .. pid
              local holds = counter .. ':z'
              local expired = redis.call('ZRANGEBYSCORE', holds, '-inf', now)
              for _, member in ipairs(expired) do
                local held = redis.call('HGET', counter, 'h:' .. member)
                if held then
                  redis.call('HDEL', counter, 'h:' .. member)
                  redis.call('HINCRBY', counter, 'f', -tonumber(held))
                  redis.call('HINCRBY', counter, 's', tonumber(held))
                end
              end
              if #expired > 0 then redis.call('ZREMRANGEBYSCORE', holds, '-inf', now) end
              local settled = tonumber(redis.call('HGET', counter, 's') or '0')
              local inFlight = tonumber(redis.call('HGET', counter, 'f') or '0')
              local worst = unit == 't' and worstTokens or worstMicros
              if settled >= amount or settled + worst > amount then return {0, i, toEnd(kind, localSeconds)} end
              if settled + inFlight + worst > amount then return {0, i, 1} end
              ids[i], counters[i], worsts[i] = pid, counter, worst
              rooms[i], ends[i] = amount - settled - inFlight - worst, toEnd(kind, localSeconds)
            end
            for i = 1, #KEYS do
              local counter, worst = counters[i], worsts[i]
              redis.call('HSET', counter, 'h:' .. id, worst)
              redis.call('HINCRBY', counter, 'f', worst)
              redis.call('ZADD', counter .. ':z', now + ttl, id)
              -- A period's counter outlives it by two days (a month's: by 33).
              local keep = (ARGV[5 + 3 * (i - 1) + 1] == 'd' and 3 or 34) * 86400
              redis.call('EXPIRE', counter, keep)
              redis.call('EXPIRE', counter .. ':z', keep)
            end
            local reply = {1}
            for i = 1, #KEYS do
              reply[3 * i - 1], reply[3 * i], reply[3 * i + 1] = ids[i], rooms[i], ends[i]
            end
            return reply
            """

    /// Each budget's state in its current period, read only (a hold past its time shows as
    /// held until the next reservation counts it).
    static let use =
        calendar + """
            -- KEYS: each budget's counter prefix   ARGV[1] the calendar's offset (s)
            -- then the period of each key ('d' or 'm')
            -- Returns for each key: used, held, seconds to the period's end.
            local time = redis.call('TIME')
            local localSeconds = tonumber(time[1]) + tonumber(ARGV[1])
            local reply = {}
            for i = 1, #KEYS do
              local kind = ARGV[i + 1]
              local counter = KEYS[i] .. ':' .. period(kind, localSeconds)
              local used = tonumber(redis.call('HGET', counter, 's') or '0')
              local held = tonumber(redis.call('HGET', counter, 'f') or '0')
              reply[3 * i - 2], reply[3 * i - 1], reply[3 * i] = used, held, toEnd(kind, localSeconds)
            end
            return reply
            """

    /// A request's end: each reservation replaced by what it used, once.
    static let settle = """
        -- KEYS: each counter (its prefix and period id)   ARGV[1] the hold's id   ARGV[2] tokens used
        -- ARGV[3] micro-units used   then the unit of each key ('t' or 'm')
        -- Returns how many of the reservations were still held (0: settled before, or expired and counted).
        local id = ARGV[1]
        local settled = 0
        for i = 1, #KEYS do
          local counter = KEYS[i]
          local held = redis.call('HGET', counter, 'h:' .. id)
          if held then
            redis.call('HDEL', counter, 'h:' .. id)
            redis.call('HINCRBY', counter, 'f', -tonumber(held))
            redis.call('ZREM', counter .. ':z', id)
            redis.call('HINCRBY', counter, 's', ARGV[3 + i] == 't' and tonumber(ARGV[2]) or tonumber(ARGV[3]))
            settled = settled + 1
          end
        end
        return settled
        """
}
