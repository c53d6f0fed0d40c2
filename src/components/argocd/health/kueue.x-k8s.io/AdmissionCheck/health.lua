-- Health of a Kueue AdmissionCheck (kueue.x-k8s.io/v1beta2), such as MultiKueue's: Healthy once its controller
-- reports it Active. From kubernetes-sigs/kueue tag v0.19.2, commit 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb:
--   apis/kueue/v1beta2/admissioncheck_types.go: condition type "Active";
--   pkg/controller/admissionchecks/multikueue/admissioncheck.go: "True" with reason "Active", or "SomeActiveClusters"
--     while some workers are missing or not connected; "False" with "BadConfig" (no MultiKueueConfig) or
--     "NoUsableClusters"; the condition carries observedGeneration. A ClusterQueue that names an inactive check admits
--     nothing (its own health says so).
local hs = { status = "Progressing", message = "Waiting for the AdmissionCheck's controller to report its Active condition" }
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
  hs.message = "Waiting for the AdmissionCheck's controller to observe its latest spec"
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
else
  hs.status = "Degraded"
end
hs.message = message
return hs
