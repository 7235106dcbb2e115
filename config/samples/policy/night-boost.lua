-- Night-time boost: between 01:00 and 06:59 (the node's local time) every subscriber gets
-- the boosted rate. The hour is a declared input, so a memoized decision is remade when
-- the hour changes. A session keeps the rate it started with unless a CoA changes it.
-- docs/policy.md.

local day   = { gold = "100M/100M", silver = "20M/20M" }
local night = { gold = "300M/300M", silver = "100M/100M" }

inputs = { authorize = { "sub.class", "hour" } }

function authorize(req, sub)
  local h = hour()
  local rates = day
  if h >= 1 and h < 7 then rates = night end
  reply("Mikrotik-Rate-Limit", rates[sub.class] or "10M/10M")
end

function selftest()
  assert(check_authorize({}, { class = "gold" }, { hour = 3 }).reply["Mikrotik-Rate-Limit"] == "300M/300M")
  assert(check_authorize({}, { class = "gold" }, { hour = 12 }).reply["Mikrotik-Rate-Limit"] == "100M/100M")
  assert(check_authorize({}, { class = "silver" }, { hour = 0 }).reply["Mikrotik-Rate-Limit"] == "20M/20M")
end
