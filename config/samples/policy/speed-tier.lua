-- Speed tier by profile class: the subscriber's profile class picks the rate limit
-- (Mikrotik-Rate-Limit here; use your BNG's attribute), with the built-in profile's
-- session timers kept. docs/policy.md.

local tiers = {
  gold    = "100M/100M",
  silver  = "20M/20M",
  prepaid = "5M/5M",
}

-- The decision depends on these only: it is reused for a user until one changes.
inputs = { authorize = { "sub.class", "sub.sessionTimeout", "sub.acctInterimInterval" } }

function authorize(req, sub)
  reply("Mikrotik-Rate-Limit", tiers[sub.class] or "1M/1M")
  if (sub.sessionTimeout or 0) > 0 then reply("Session-Timeout", sub.sessionTimeout) end
  if (sub.acctInterimInterval or 0) > 0 then reply("Acct-Interim-Interval", sub.acctInterimInterval) end
end

function selftest()
  local d = check_authorize({}, { class = "gold", sessionTimeout = 86400, acctInterimInterval = 300 })
  assert(d.accept and d.reply["Mikrotik-Rate-Limit"] == "100M/100M" and d.reply["Session-Timeout"] == "86400")
  d = check_authorize({}, { class = "unknown" })
  assert(d.reply["Mikrotik-Rate-Limit"] == "1M/1M" and d.reply["Session-Timeout"] == nil)
end
