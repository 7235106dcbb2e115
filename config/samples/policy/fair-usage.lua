-- Fair-usage throttle: once a session has used N GiB, a CoA-Request gives it a throttled
-- rate; the subscriber's profile may set its own N (quotaOctets). The count is the
-- session's (input + output octets, as the NAS reports them): policing keeps no usage
-- total across the sessions of a billing period. docs/policy.md.

local default_quota_gib = 50
local throttled = "1M/1M"

-- octetsGiB changes once per GiB: the hook runs again only then (and per new session).
inputs = { accounting = { "session.octetsGiB", "sub.quotaOctets" } }

function accounting(req, session, sub)
  local quota = default_quota_gib
  if (sub.quotaOctets or 0) > 0 then quota = sub.quotaOctets / 2^30 end
  if session.octetsGiB >= quota then
    coa("Mikrotik-Rate-Limit", throttled)
  end
end

function selftest()
  assert(next(check_accounting({}, { octetsGiB = 49 }, { quotaOctets = 0 }).coa) == nil)
  assert(check_accounting({}, { octetsGiB = 50 }, { quotaOctets = 0 }).coa["Mikrotik-Rate-Limit"] == throttled)
  assert(check_accounting({}, { octetsGiB = 1 }, { quotaOctets = 2^30 }).coa["Mikrotik-Rate-Limit"] == throttled)
end
