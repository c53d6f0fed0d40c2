-- Health of an Argo CD Application, as its parent (an app-of-apps) sees it: a sync wave of the parent waits until
-- the Applications of the wave before are Healthy. Argo CD has no built-in health for Applications since v1.8
-- (argoproj/argo-cd docs/operator-manual/health.md, "Argocd App", at tag v3.5.1); this is the check documented there,
-- plus what a parent must not miss:
--   * a child whose own sync operation runs (status.operationState.phase "Running" or "Terminating") is Progressing:
--     its health is still that of its previous revision;
--   * a child whose last sync failed (phase "Failed" or "Error") and that is not Healthy is Degraded, with the
--     operation's message, so the parent's sync fails visibly (and retries) instead of waiting for ever.
-- Fields: pkg/apis/application/v1alpha1/types.go (ApplicationStatus.Health.Status, OperationState.Phase and
-- Message) and gitops-engine/pkg/sync/common/types.go (the phases), tag v3.5.1, commit
-- 109ca7ca71139e514114499d294a492e7910a965. AppHealthStatus.Message is deprecated and unset in v3.
local hs = { status = "Progressing", message = "Waiting for the Application to report its health" }
if obj.status == nil then
  return hs
end

local health = nil
if obj.status.health ~= nil and obj.status.health.status ~= nil and obj.status.health.status ~= "" then
  health = obj.status.health.status
end

local op = obj.status.operationState
if op ~= nil and (op.phase == "Running" or op.phase == "Terminating") then
  hs.message = "The Application is syncing"
  if op.message ~= nil and op.message ~= "" then
    hs.message = "The Application is syncing: " .. op.message
  end
  return hs
end
if op ~= nil and (op.phase == "Failed" or op.phase == "Error") and health ~= "Healthy" then
  hs.status = "Degraded"
  hs.message = "The last sync failed"
  if op.message ~= nil and op.message ~= "" then
    hs.message = "The last sync failed: " .. op.message
  end
  return hs
end

if health ~= nil then
  hs.status = health
  hs.message = "The Application is " .. health
  if obj.status.health.message ~= nil and obj.status.health.message ~= "" then
    hs.message = obj.status.health.message
  end
end
return hs
