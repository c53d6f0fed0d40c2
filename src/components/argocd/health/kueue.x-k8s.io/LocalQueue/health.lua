-- Health of a Kueue LocalQueue (kueue.x-k8s.io/v1beta2): Healthy once Kueue reports it Active, i.e. its ClusterQueue
-- exists and is active, so workloads submitted to it can be admitted. From kubernetes-sigs/kueue tag v0.19.2, commit
-- 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb:
--   apis/kueue/v1beta2/localqueue_types.go: condition type "Active";
--   pkg/controller/core/localqueue_controller.go: reasons "Ready", "Stopped" (its stopPolicy),
--     "ClusterQueueDoesNotExist" and "ClusterQueueIsInactive"; the condition carries observedGeneration.
-- "ClusterQueueIsInactive" is all a LocalQueue says of a ClusterQueue that is not Active, for whatever reason: an
-- admin's hold (stopPolicy Hold or HoldAndDrain, which the ClusterQueue check calls Suspended), a queue not reconciled
-- yet, or one that refers to a flavor that does not exist (Degraded there). So it is Suspended, the mildest state that
-- is not Healthy (a sync wave still waits for it): a held ClusterQueue suspends its LocalQueues and does not turn the
-- tenants Degraded, and what is wrong with a ClusterQueue shows in the ClusterQueue's own health, in its Application.
local hs = { status = "Progressing", message = "Waiting for Kueue to report the LocalQueue's Active condition" }
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local active = nil
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Active" then
    active = c
  end
end
if active == nil then
  return hs
end
if obj.metadata.generation ~= nil and active.observedGeneration ~= nil and active.observedGeneration < obj.metadata.generation then
  hs.message = "Waiting for Kueue to observe the LocalQueue's latest spec"
  return hs
end

local message = active.message
if message == nil or message == "" then
  message = active.reason or ""
elseif active.reason ~= nil and active.reason ~= "" then
  message = active.reason .. ": " .. message
end

if active.status == "True" then
  hs.status = "Healthy"
  hs.message = message
elseif active.reason == "Stopped" then
  hs.status = "Suspended"
  hs.message = message
elseif active.reason == "ClusterQueueIsInactive" then
  hs.status = "Suspended"
  hs.message = message .. " (ClusterQueue " .. (obj.spec and obj.spec.clusterQueue or "?") .. " is not active: its own health says why)"
else
  hs.status = "Degraded"
  hs.message = message
end
return hs
