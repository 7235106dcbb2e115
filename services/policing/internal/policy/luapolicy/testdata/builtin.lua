-- The built-in policy written in Lua (make bench-policy, BenchmarkPolicy): the profile's
-- attributes on Access-Accept, a disconnect once the session used the profile's quota. Its
-- inputs are declared: with policy.lua.memoize the Accept is remade only when the profile
-- changes, the quota check only when the session crosses a percent of its quota (never
-- without a quota); with memoize off every decision runs the script.

inputs = {
  authorize = { "sub.framedIPAddress", "sub.framedPool", "sub.sessionTimeout", "sub.idleTimeout",
    "sub.acctInterimInterval", "sub.class", "sub.filterId", "sub.rateLimit" },
  accounting = { "session.quotaPercent" },
}

function authorize(req, sub)
  local ip = sub.framedIPAddress
  if ip then reply("Framed-IP-Address", ip) end
  local pool = sub.framedPool
  if pool then reply("Framed-Pool", pool) end
  local v = sub.sessionTimeout
  if v > 0 then reply("Session-Timeout", v) end
  v = sub.idleTimeout
  if v > 0 then reply("Idle-Timeout", v) end
  v = sub.acctInterimInterval
  if v > 0 then reply("Acct-Interim-Interval", v) end
  local s = sub.class
  if s then reply("Class", s) end
  s = sub.filterId
  if s then reply("Filter-Id", s) end
  s = sub.rateLimit
  if s then reply("Mikrotik-Rate-Limit", s) end
end

function accounting(req, session, sub)
  local used = session.quotaPercent
  if used and used >= 100 then disconnect("quota") end
end
