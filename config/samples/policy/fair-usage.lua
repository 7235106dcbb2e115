-- Fair-usage throttle: once the subscriber has used N GiB in the billing period, a
-- CoA-Request gives the session a throttled rate. N is the profile's quotaOctets (default
-- 50 GiB). The period's usage before this session is the profile's usedOctets, which the
-- billing system keeps (a subscriber-file field, or the LDAP attribute named by
-- subscribers.ldap.attributes.usedOctets); the session's own octets are added to it, as the
-- NAS reports them. docs/policy.md.

local default_quota_gib = 50
local throttled = "1M/1M"

-- octetsGiB changes once per GiB: the hook runs again only then (per new session, and when
-- the profile's quota or usage changes).
inputs = { accounting = { "session.octetsGiB", "sub.quotaOctets", "sub.usedOctets" } }

function accounting(req, session, sub)
  local quota = default_quota_gib
  if (sub.quotaOctets or 0) > 0 then quota = sub.quotaOctets / 2^30 end
  if session.octetsGiB + (sub.usedOctets or 0) / 2^30 >= quota then
    coa("Mikrotik-Rate-Limit", throttled)
  end
end

function selftest()
  assert(next(check_accounting({}, { octetsGiB = 49 }, { quotaOctets = 0, usedOctets = 0 }).coa) == nil)
  assert(check_accounting({}, { octetsGiB = 50 }, { quotaOctets = 0, usedOctets = 0 }).coa["Mikrotik-Rate-Limit"] == throttled)
  assert(check_accounting({}, { octetsGiB = 1 }, { quotaOctets = 2^30, usedOctets = 0 }).coa["Mikrotik-Rate-Limit"] == throttled)
  -- 45 GiB earlier in the period and 5 in this session: the period's 50 GiB are used.
  assert(check_accounting({}, { octetsGiB = 5 }, { quotaOctets = 0, usedOctets = 45 * 2^30 }).coa["Mikrotik-Rate-Limit"] == throttled)
  assert(next(check_accounting({}, { octetsGiB = 4 }, { quotaOctets = 0, usedOctets = 45 * 2^30 }).coa) == nil)
end
