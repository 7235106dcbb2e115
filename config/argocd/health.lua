-- Argo CD health check of aaa.openaaa.io/AAACluster (resource.customizations.health).
--
-- Healthy     Ready=True for the current generation (the condition's observedGeneration
--             equals metadata.generation).
-- Degraded    Degraded=True for the current generation: the cluster serves but not fully (a
--             data center down, a failed schema migration, RadSec certificates not issued);
--             the message is the Degraded condition's.
-- Progressing anything else: no status yet, a spec change the operator has not observed, or
--             Ready=False while Cassandra, the schema or policing come up (Ready's message).
local hs = {}

local function current(cond, generation)
  if generation == nil or cond.observedGeneration == nil then
    return true
  end
  return cond.observedGeneration >= generation
end

local generation = nil
if obj.metadata ~= nil then
  generation = obj.metadata.generation
end

if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report the status"
  return hs
end

local ready = nil
local degraded = nil
for _, cond in ipairs(obj.status.conditions) do
  if cond.type == "Ready" then
    ready = cond
  elseif cond.type == "Degraded" then
    degraded = cond
  end
end

if obj.status.observedGeneration ~= nil and generation ~= nil and obj.status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. generation
  return hs
end

if degraded ~= nil and degraded.status == "True" and current(degraded, generation) then
  hs.status = "Degraded"
  hs.message = degraded.message or degraded.reason or "Degraded"
  return hs
end

if ready ~= nil and ready.status == "True" and current(ready, generation) then
  hs.status = "Healthy"
  hs.message = ready.message or "Ready"
  return hs
end

hs.status = "Progressing"
if ready ~= nil and not current(ready, generation) then
  hs.message = "Waiting for the operator to observe generation " .. generation
elseif ready ~= nil and ready.message ~= nil and ready.message ~= "" then
  hs.message = ready.message
else
  hs.message = "Waiting for the AAACluster to become Ready"
end
return hs
