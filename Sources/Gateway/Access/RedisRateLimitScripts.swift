/// The Lua the Redis limiter runs: one script per decision, atomic on the server, on the
/// server's clock (`TIME`), so several gateways share one limit exactly. Checked by hand
/// against redis-server 7.0 with redis-cli; the limiter that sends them (EVALSHA, loaded at
/// connect and again after NOSCRIPT) comes with the Redis client.
enum RedisRateLimitScripts {
    /// A request's admission: the day's tokens, the minute's requests, the leases held.
    static let acquire = """
        -- One rate-limit decision for one key, atomically, on the server's clock (TIME): the
        -- instances' clocks never enter it, so several gateways share one limit exactly.
        --
        -- KEYS[1] the key's requests of the last minute: a sorted set, member a request id, score
        --         its start in milliseconds
        -- KEYS[2] the key's leases: a sorted set, member a lease id, score when it expires (ms)
        -- KEYS[3] the prefix of the key's daily token counter; the UTC day is appended (":<day>")
        -- ARGV[1] requests per minute (0: no limit)      ARGV[2] requests at once (0: no limit)
        -- ARGV[3] tokens per day (0: no limit)           ARGV[4] a lease's time to live (ms)
        -- ARGV[5] this request's id (unique)             ARGV[6] tokens to reserve now (an estimate)
        --
        -- Checks in the in-memory limiter's order: an exhausted day, then the minute, then
        -- concurrency. A refused request is not counted. Returns
        -- {allowed (1 or 0), reason, retry-after s, quota, limit, remaining, reset s, day}
        -- where quota names the limit the status speaks of (rpm, tokens or concurrent).
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
        local tokensKey = KEYS[3] .. ':' .. day

        local used = 0
        if perDay > 0 then
          used = tonumber(redis.call('GET', tokensKey) or '0')
          if used >= perDay then
            return {0, 'daily_tokens', untilMidnight, 'tokens', perDay, 0, untilMidnight, day}
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

        if concurrent > 0 then
          redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
          if redis.call('ZCARD', KEYS[2]) >= concurrent then
            if rpm > 0 then return {0, 'concurrency', 1, 'rpm', rpm, math.max(0, rpm - count), windowReset(), day} end
            if perDay > 0 then return {0, 'concurrency', 1, 'tokens', perDay, math.max(0, perDay - used), untilMidnight, day} end
            return {0, 'concurrency', 1, 'concurrent', concurrent, 0, 1, day}
          end
        end

        if rpm > 0 then
          redis.call('ZADD', KEYS[1], now, id)
          redis.call('PEXPIRE', KEYS[1], 61000)
          count = count + 1
        end
        if concurrent > 0 then
          redis.call('ZADD', KEYS[2], now + leaseTTL, id)
          redis.call('PEXPIRE', KEYS[2], leaseTTL + 1000)
        end
        if perDay > 0 and reserve > 0 then
          used = redis.call('INCRBY', tokensKey, reserve)
          redis.call('EXPIRE', tokensKey, 2 * 86400)
        end
        if rpm > 0 then return {1, 'ok', 0, 'rpm', rpm, math.max(0, rpm - count), windowReset(), day} end
        if perDay > 0 then return {1, 'ok', 0, 'tokens', perDay, math.max(0, perDay - used), untilMidnight, day} end
        return {1, 'ok', 0, 'none', 0, 0, 0, day}
        """

    /// A request's end: its lease given back, its tokens settled against the reservation.
    static let finish = """
        -- Ends a request: gives its lease back (once) and settles its tokens — the real count
        -- minus what acquire reserved — on the day the reservation was made.
        --
        -- KEYS[1] the minute's requests   KEYS[2] the leases   KEYS[3] the daily counter's prefix
        -- ARGV[1] the request's id        ARGV[2] tokens used  ARGV[3] tokens reserved
        -- ARGV[4] the reservation's day   ARGV[5] requests per minute (0: none)
        -- ARGV[6] tokens per day (0: none)
        -- Returns {quota, limit, remaining, reset s} as acquire's allowed answer would now.
        local id = ARGV[1]
        local used = tonumber(ARGV[2])
        local reserved = tonumber(ARGV[3])
        local day = ARGV[4]
        local rpm = tonumber(ARGV[5])
        local perDay = tonumber(ARGV[6])
        local time = redis.call('TIME')
        local seconds = tonumber(time[1])
        local now = seconds * 1000 + math.floor(tonumber(time[2]) / 1000)
        local today = math.floor(seconds / 86400)

        redis.call('ZREM', KEYS[2], id)
        local tokensKey = KEYS[3] .. ':' .. day
        local total = 0
        if perDay > 0 and used ~= reserved then
          total = redis.call('INCRBY', tokensKey, used - reserved)
          redis.call('EXPIRE', tokensKey, 2 * 86400)
        end
        if rpm > 0 then
          redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
          local count = redis.call('ZCARD', KEYS[1])
          local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
          local reset = 0
          if #newest > 0 then reset = math.max(1, math.ceil((tonumber(newest[2]) + 60000 - now) / 1000)) end
          return {'rpm', rpm, math.max(0, rpm - count), reset}
        end
        if perDay > 0 then
          total = tonumber(redis.call('GET', KEYS[3] .. ':' .. today) or '0')
          return {'tokens', perDay, math.max(0, perDay - total), (today + 1) * 86400 - seconds}
        end
        return {'none', 0, 0, 0}
        """
}
