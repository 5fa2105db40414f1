-- Argo CD health check of TeardownPolicy and ClusterTeardownPolicy
-- (teardown.dev), for argocd-cm's resource.customizations.health.<group_kind>
-- (docs/monitoring.md, "GitOps health"). It reads what kstatus reads:
-- Healthy when Ready is True for the current generation, Degraded while the
-- policy is refused (Stalled), Progressing while the controller has not yet
-- judged this generation or a deleted policy finishes its teardowns.
-- Tested against real policies by test/gitops.
local hs = {status = "Progressing", message = "waiting for the teardown-controller to judge this policy"}
if obj.metadata.deletionTimestamp ~= nil then
  hs.message = "deleted: finishing the teardowns it started"
  return hs
end
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local generation = obj.metadata.generation or 0
local ready = nil
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Stalled" and c.status == "True" then
    hs.status = "Degraded"
    hs.message = (c.reason or "") .. ": " .. (c.message or "")
    return hs
  end
  if c.type == "Ready" then
    ready = c
  end
end
if ready == nil or (ready.observedGeneration or 0) < generation then
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
else
  hs.status = "Degraded"
end
hs.message = (ready.reason or "") .. ": " .. (ready.message or "")
return hs
