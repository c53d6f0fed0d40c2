-- Health of a Kueue MultiKueueCluster (kueue.x-k8s.io/v1beta2), a worker of a MultiKueue manager: Healthy once the
-- manager is connected to it. From kubernetes-sigs/kueue tag v0.19.2, commit 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb:
--   apis/kueue/v1beta2/multikueue_types.go: condition type "Active";
--   pkg/controller/admissionchecks/multikueue/multikueuecluster.go (Reconcile, loadClientConfig, updateStatus): "True"
--     with reason "Active" ("Connected"); "False" with "BadKubeConfig" (the Secret or its key "kubeconfig" is missing,
--     or the kubeconfig does not load), "InsecureKubeConfig", "BadClusterProfile",
--     "MultiKueueClusterProfileFeatureDisabled" or "ClientConnectionFailed" (an expired token, an unreachable
--     server); the condition carries observedGeneration.
local hs = { status = "Progressing", message = "Waiting for Kueue to report the MultiKueueCluster's Active condition" }
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
  hs.message = "Waiting for Kueue to observe the MultiKueueCluster's latest spec"
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
