-- Reject by Calling-Station-Id (the device's MAC, or the MSISDN on mobile networks): the
-- blocklist is a Lua table built once per Lua state when the script loads, so a lookup is
-- one table index. Change the list and the file is reloaded live. Accepted subscribers get
-- their profile's rate limit (a script's authorize replaces the built-in policy's reply).
-- docs/policy.md.

local blocked = {}
for _, id in ipairs({
  "02-00-5E-10-00-01",
  "02-00-5E-10-00-02",
  "33612345678",
}) do blocked[id] = true end

inputs = { authorize = { "req.Calling-Station-Id", "sub.rateLimit" } }

function authorize(req, sub)
  local id = req["Calling-Station-Id"]
  if id and blocked[string.upper(id)] then
    return reject("Calling-Station-Id blocklisted")
  end
  if sub.rateLimit then reply("Mikrotik-Rate-Limit", sub.rateLimit) end
end

function selftest()
  assert(not check_authorize({ ["Calling-Station-Id"] = "02-00-5e-10-00-01" }, {}).accept)
  assert(check_authorize({ ["Calling-Station-Id"] = "02-00-5E-10-00-99" }, { rateLimit = "20M/20M" }).reply["Mikrotik-Rate-Limit"] == "20M/20M")
  assert(check_authorize({}, {}).accept)
end
