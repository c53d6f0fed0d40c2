-- Health of an NVIDIA Dynamo DynamoGraphDeployment (nvidia.com/v1beta1, stored as v1alpha1; the status is the same
-- in both). From ai-dynamo/dynamo at the 1.4.0 release's branch point, commit
-- d7bb84ef02051485351dbb9626eaffbd182ef0a8 (read from the fork wxsms/dynamo; no v1.4.0 tag exists):
--   deploy/operator/api/v1beta1/common.go: status.state is "initializing" (the CRD default), "pending",
--     "successful" or "failed";
--   deploy/operator/internal/controller/dynamographdeployment_controller.go: every reconcile sets the state and a
--     "Ready" condition (True only when "successful"; its reason and message say what is not ready or failed), and
--     status.observedGeneration only when the reconcile succeeded, so a failed one keeps the previous generation.
local hs = { status = "Progressing", message = "Waiting for the Dynamo operator to reconcile the DynamoGraphDeployment" }
if obj.status == nil or obj.status.state == nil or obj.status.state == "" then
  return hs
end

local ready = nil
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" then
      ready = c
    end
  end
end
local function readyMessage(fallback)
  if ready ~= nil and ready.message ~= nil and ready.message ~= "" then
    return ready.message
  end
  if ready ~= nil and ready.reason ~= nil and ready.reason ~= "" and ready.reason ~= "undefined" then
    return ready.reason
  end
  return fallback
end

local state = obj.status.state
if state == "failed" then
  hs.status = "Degraded"
  hs.message = readyMessage("The Dynamo operator failed to reconcile the DynamoGraphDeployment")
  return hs
end
if obj.metadata.generation ~= nil and obj.status.observedGeneration ~= nil and obj.status.observedGeneration < obj.metadata.generation then
  hs.message = "Waiting for the Dynamo operator to observe the DynamoGraphDeployment's latest spec"
  return hs
end
if state == "successful" then
  hs.status = "Healthy"
  hs.message = readyMessage("Every component of the DynamoGraphDeployment is ready")
  return hs
end
hs.message = readyMessage("The DynamoGraphDeployment is " .. state)
return hs
