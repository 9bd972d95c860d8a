/// The Lua the Redis limiter runs: one script per decision, atomic on the server, on the
/// server's clock (`TIME`), so several gateways share one limit exactly; the instances'
/// clocks never enter it.
///
/// Every limiter key has four Redis keys (``RedisRateLimiter`` names them):
/// - `w`: the requests of the last minute, a sorted set (member the request's id, score its
///   start in ms);
/// - `l`: the live requests, a sorted set (member the request's id, score when its lease
///   expires in ms) — the concurrency slots, and what holds a reservation;
/// - `v`: the tokens reserved by live requests, a hash (request id → tokens, and `#` → their sum);
/// - `t:<day>`: the tokens settled for a UTC day (real counts, and reservations of leases that expired).
enum RedisRateLimitScripts {
    /// A request's admission: the day's tokens, the minute's requests, the leases held.
    static let acquire = """
        -- KEYS[1] w   KEYS[2] l   KEYS[3] v   KEYS[4] the prefix of t (":<day>" is appended)
        -- ARGV[1] requests per minute (0: no limit)   ARGV[2] requests at once (0: no limit)
        -- ARGV[3] tokens per day (0: no limit)        ARGV[4] a lease's time to live (ms)
        -- ARGV[5] this request's id (unique)          ARGV[6] tokens to reserve (an estimate)
        -- Checks in the in-memory limiter's order: the day (its worst case must fit), the minute, concurrency.
        -- A refused request is not counted. Returns
        -- {allowed (1 or 0), reason, retry-after s, quota, limit, remaining, reset s, day}.
        local rpm = tonumber(ARGV[1])
        local concurrent = tonumber(ARGV[2])
        local perDay = tonumber(ARGV[3])
        local leaseTTL = tonumber(ARGV[4])
        local id = ARGV[5]
        local reserve = tonumber(ARGV[6])
        local time = redis.call('TIME')
        local seconds = tonumber(time[1])
        local now = seconds * 1000 + math.floor(tonumber(time[2]) / 1000)
        local day = math.floor(seconds / 86400)
        local untilMidnight = (day + 1) * 86400 - seconds
        local tokensKey = KEYS[4] .. ':' .. day
        local leased = concurrent > 0 or perDay > 0

        -- A lease past its time belongs to a request that cannot be running (its instance
        -- died): its slot is freed and its reservation charged as it stands, the call having
        -- perhaps been made.
        local inFlight = 0
        if leased then
          local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
          for _, member in ipairs(expired) do
            local amount = redis.call('HGET', KEYS[3], member)
            if amount then
              redis.call('HDEL', KEYS[3], member)
              redis.call('HINCRBY', KEYS[3], '#', -tonumber(amount))
              redis.call('INCRBY', tokensKey, amount)
              redis.call('EXPIRE', tokensKey, 2 * 86400)
            end
          end
          if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) end
          inFlight = tonumber(redis.call('HGET', KEYS[3], '#') or '0')
        end

        local settled = 0
        if perDay > 0 then
          settled = tonumber(redis.call('GET', tokensKey) or '0')
          local left = math.max(0, perDay - settled - inFlight)
          -- The request's worst case (its reservation) must fit in what the day has left.
          if settled >= perDay or settled + reserve > perDay then
            return {0, 'daily_tokens', untilMidnight, 'tokens', perDay, left, untilMidnight, day}
          end
          if settled + inFlight >= perDay or settled + inFlight + reserve > perDay then
            -- Spoken for by calls still running, whose real counts may leave room soon.
            return {0, 'daily_tokens', 1, 'tokens', perDay, left, untilMidnight, day}
          end
        end

        local count = 0
        local function windowReset()
          local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
          if #newest == 0 then return 0 end
          return math.max(1, math.ceil((tonumber(newest[2]) + 60000 - now) / 1000))
        end
        if rpm > 0 then
          redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
          count = redis.call('ZCARD', KEYS[1])
          if count >= rpm then
            -- A retry succeeds once all but rpm - 1 of the window's requests have left it.
            local leaving = redis.call('ZRANGE', KEYS[1], count - rpm, count - rpm, 'WITHSCORES')
            local retry = math.max(1, math.ceil((tonumber(leaving[2]) + 60000 - now) / 1000))
            return {0, 'requests_per_minute', retry, 'rpm', rpm, 0, windowReset(), day}
          end
        end

        if concurrent > 0 and redis.call('ZCARD', KEYS[2]) >= concurrent then
          if rpm > 0 then return {0, 'concurrency', 1, 'rpm', rpm, math.max(0, rpm - count), windowReset(), day} end
          if perDay > 0 then return {0, 'concurrency', 1, 'tokens', perDay, math.max(0, perDay - settled - inFlight), untilMidnight, day} end
          return {0, 'concurrency', 1, 'concurrent', concurrent, 0, 1, day}
        end

        if rpm > 0 then
          redis.call('ZADD', KEYS[1], now, id)
          redis.call('PEXPIRE', KEYS[1], 61000)
          count = count + 1
        end
        if leased then
          redis.call('ZADD', KEYS[2], now + leaseTTL, id)
          redis.call('PEXPIRE', KEYS[2], leaseTTL + 1000)
        end
        if perDay > 0 and reserve > 0 then
          redis.call('HSET', KEYS[3], id, reserve)
          inFlight = redis.call('HINCRBY', KEYS[3], '#', reserve)
          redis.call('PEXPIRE', KEYS[3], leaseTTL + 1000)
        end
        -- The window's newest request is this one: it is empty again in 60 s.
        if rpm > 0 then return {1, 'ok', 0, 'rpm', rpm, math.max(0, rpm - count), 60, day} end
        if perDay > 0 then return {1, 'ok', 0, 'tokens', perDay, math.max(0, perDay - settled - inFlight), untilMidnight, day} end
        return {1, 'ok', 0, 'none', 0, 0, 0, day}
        """

    /// Tokens used outside any request's lease (a job's answered item), added to today's count.
    static let charge = """
        -- KEYS[1] the prefix of t; ARGV[1] the tokens. Returns the UTC day they count for.
        local day = math.floor(tonumber(redis.call('TIME')[1]) / 86400)
        local tokensKey = KEYS[1] .. ':' .. day
        local used = tonumber(ARGV[1])
        if redis.call('INCRBY', tokensKey, used) == used then redis.call('EXPIRE', tokensKey, 2 * 86400) end
        return day
        """

    /// Requests' ends: each lease given back and its reservation replaced by its real count,
    /// each once; several leases (of any keys) in one call.
    static let finish = """
        -- KEYS: w, l, v and the prefix of t of each lease, four by four
        -- ARGV[1] 1 to return the first lease's status, 0 for none; then for each lease:
        -- its id, tokens used, the reservation's day, requests per minute (0: none) and
        -- tokens per day (0: none), five by five.
        -- Returns {quota, limit, remaining, reset s} as acquire's allowed answer would now for
        -- the first lease's key, or {} when ARGV[1] is 0.
        local time = redis.call('TIME')
        local seconds = tonumber(time[1])
        local now = seconds * 1000 + math.floor(tonumber(time[2]) / 1000)
        local today = math.floor(seconds / 86400)

        for i = 0, #KEYS / 4 - 1 do
          local leases, reserved, tokens = KEYS[4 * i + 2], KEYS[4 * i + 3], KEYS[4 * i + 4]
          local id, used, day = ARGV[5 * i + 2], tonumber(ARGV[5 * i + 3]), ARGV[5 * i + 4]
          local perDay = tonumber(ARGV[5 * i + 6])
          -- Only the first finish of a live lease settles: a second one, or one after the
          -- lease expired (its reservation charged then), finds nothing left to settle.
          local live = redis.call('ZREM', leases, id) == 1
          local amount = redis.call('HGET', reserved, id)
          if amount then
            redis.call('HDEL', reserved, id)
            redis.call('HINCRBY', reserved, '#', -tonumber(amount))
            live = true
          end
          if live and perDay > 0 and used > 0 then
            -- On the reservation's day: a call that started before midnight counts for its day.
            local tokensKey = tokens .. ':' .. day
            -- A day's counter lives two days from its first tokens.
            if redis.call('INCRBY', tokensKey, used) == used then redis.call('EXPIRE', tokensKey, 2 * 86400) end
          end
        end

        if ARGV[1] ~= '1' then return {} end
        local rpm, perDay = tonumber(ARGV[5]), tonumber(ARGV[6])
        if rpm > 0 then
          redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
          local count = redis.call('ZCARD', KEYS[1])
          local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
          local reset = 0
          if #newest > 0 then reset = math.max(1, math.ceil((tonumber(newest[2]) + 60000 - now) / 1000)) end
          return {'rpm', rpm, math.max(0, rpm - count), reset}
        end
        if perDay > 0 then
          local settled = tonumber(redis.call('GET', KEYS[4] .. ':' .. today) or '0')
          local inFlight = tonumber(redis.call('HGET', KEYS[3], '#') or '0')
          return {'tokens', perDay, math.max(0, perDay - settled - inFlight), (today + 1) * 86400 - seconds}
        end
        return {'none', 0, 0, 0}
        """

    /// Extends the leases an instance holds, so a live long request keeps its slot while a
    /// dead instance's expire.
    static let renew = """
        -- KEYS pairs: l and v of each lease's key   ARGV[1] a lease's time to live (ms)
        -- ARGV[1 + i] the id of the lease in the i-th pair. Only leases still there are
        -- extended (XX): one that expired or was finished stays gone. Returns how many were.
        local ttl = tonumber(ARGV[1])
        local time = redis.call('TIME')
        local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        local renewed = 0
        for i = 1, #KEYS / 2 do
          local leases = KEYS[2 * i - 1]
          if redis.call('ZSCORE', leases, ARGV[i + 1]) then
            redis.call('ZADD', leases, 'XX', now + ttl, ARGV[i + 1])
            redis.call('PEXPIRE', leases, ttl + 1000)
            redis.call('PEXPIRE', KEYS[2 * i], ttl + 1000)
            renewed = renewed + 1
          end
        end
        return renewed
        """
}
