-- A Lua rule that throttles (docs/diameter-gx.md "Lua hooks"): once the session's octets reach
-- the subscriber's quota, gx_update removes the internet rule and installs its own throttle
-- rule; gx_initial rejects a blocked profile. Memoized on the declared inputs. Used by the gx
-- package's tests and by `make bench-gx`.
inputs = {
  gx_initial = {"sub.profile"},
  gx_update = {"session.octets", "sub.quotaOctets"},
}
function gx_initial(req, sub)
  if sub.profile == "blocked" then reject("blocked profile") end
end
function gx_update(req, session, sub)
  if sub.quotaOctets > 0 and session.octets >= sub.quotaOctets then
    remove_rule("internet")
    install_rule("lua-throttle-1m")
  end
end
