-- A Lua rule that throttles (docs/diameter-gx.md "Lua hooks"): once the period's octets (the
-- subscriber's usedOctets and the session's) reach the subscriber's quota, gx_update removes
-- the internet rule and installs its own throttle rule; gx_initial rejects a blocked profile.
-- Memoized on the declared inputs: quotaPercent moves once per percent of the quota, so a
-- usage report re-runs the rule only when it crosses one (session.octets would change at
-- every report and never let a decision be reused). Used by the gx package's tests and by
-- `make bench-gx`.
inputs = {
  gx_initial = {"sub.profile"},
  gx_update = {"session.quotaPercent"},
}
function gx_initial(req, sub)
  if sub.profile == "blocked" then reject("blocked profile") end
end
function gx_update(req, session, sub)
  if session.quotaPercent ~= nil and session.quotaPercent >= 100 then
    remove_rule("internet")
    install_rule("lua-throttle-1m")
  end
end
