-- Health of an Argo CD Application, as its parent (an app-of-apps) sees it: a sync wave of the parent waits until
-- the Applications of the wave before are Healthy. Argo CD has no built-in health for Applications since v1.8
-- (argoproj/argo-cd docs/operator-manual/health.md, "Argocd App", at tag v3.5.1); this is the check documented there,
-- plus what a parent must not miss, read from argo-cd at tag v3.5.1, commit 109ca7ca71139e514114499d294a492e7910a965:
--   * a child whose sync operation is requested (`operation`, set until the controller starts it) or runs
--     (status.operationState.phase "Running" or "Terminating") is Progressing: its health is still that of its
--     previous revision;
--   * a child the controller has not compared with the source it was given yet (spec.source differs from
--     status.sync.comparedTo.source: what controller/appcontroller.go currentSourceEqualsSyncedSource refreshes on)
--     is Progressing: its sync status and health are those of its previous source (the revision the parent applied
--     before, or the chart version before);
--   * a child that is OutOfSync with automated sync on and whose last sync was not of the compared revision and
--     source is Progressing: its automated sync is about to start (appcontroller.go autoSync and
--     alreadyAttemptedSync: it syncs what its last sync result, status.operationState.syncResult, does not show, and
--     never retries what it does);
--   * a child Argo CD cannot compare (status.sync.status "Unknown": it cannot build or read its source) is Degraded;
--   * a child whose last sync failed (phase "Failed" or "Error") and that is not Healthy is Degraded, with the
--     operation's message, so the parent's sync fails visibly (and retries) instead of waiting for ever.
-- An Application that syncs itself must not be waited on with this check: while its own sync runs, it is Progressing
-- (the testdata "own-sync-running"), and a sync wave waits for the Applications of the waves before to be Healthy
-- (gitops-engine/pkg/sync/sync_context.go Sync; only the health aggregation of controller/health.go skips an app that
-- manages itself, not the sync). Fields: pkg/apis/application/v1alpha1/types.go (Application.Operation,
-- ApplicationStatus.Sync.ComparedTo and Revision, Health.Status, OperationState.Phase, Message and SyncResult)
-- and gitops-engine/pkg/sync/common/types.go (the phases). AppHealthStatus.Message is deprecated and unset in v3.

-- Whether two values read from the object are equal as Argo CD compares them (Go structs from JSON): an absent
-- field equals its zero value ("", false, 0, an empty list or map), which the controller omits when it writes.
local function empty(v)
  if v == nil or v == "" or v == false or v == 0 then
    return true
  end
  if type(v) == "table" then
    return next(v) == nil
  end
  return false
end
local function same(a, b)
  if empty(a) and empty(b) then
    return true
  end
  if type(a) ~= "table" or type(b) ~= "table" then
    return a == b
  end
  for k, v in pairs(a) do
    if not same(v, b[k]) then
      return false
    end
  end
  for k, v in pairs(b) do
    if a[k] == nil and not empty(v) then
      return false
    end
  end
  return true
end

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
if obj.operation ~= nil and obj.operation.sync ~= nil then
  hs.message = "A sync of the Application is requested"
  return hs
end

local spec = obj.spec or {}
local sync = obj.status.sync or {}
local compared = sync.comparedTo or {}
if not same(spec.source, compared.source) or not same(spec.sources, compared.sources) then
  hs.message = "Waiting for Argo CD to compare the Application with its source"
  if spec.source ~= nil and spec.source.targetRevision ~= nil and spec.source.targetRevision ~= "" then
    hs.message = hs.message .. " at " .. spec.source.targetRevision
  end
  return hs
end

if sync.status == "Unknown" then
  hs.status = "Degraded"
  hs.message = "Argo CD cannot compare the Application with its source"
  if obj.status.conditions ~= nil then
    for _, c in ipairs(obj.status.conditions) do
      if c.type == "ComparisonError" and c.message ~= nil and c.message ~= "" then
        hs.message = hs.message .. ": " .. c.message
      end
    end
  end
  return hs
end

-- alreadyAttemptedSync: a sync result of this revision and this source; without a result, any finished operation
local attempted = false
if op ~= nil and op.syncResult ~= nil then
  attempted = op.syncResult.revision == sync.revision and same(op.syncResult.source, spec.source) and same(op.syncResult.sources, spec.sources)
elseif op ~= nil then
  attempted = op.phase == "Succeeded" or op.phase == "Failed" or op.phase == "Error"
end
local automated = spec.syncPolicy ~= nil and spec.syncPolicy.automated ~= nil and spec.syncPolicy.automated.enabled ~= false
if sync.status == "OutOfSync" and automated and not attempted then
  hs.message = "Waiting for the automated sync of the Application"
  if sync.revision ~= nil and sync.revision ~= "" then
    hs.message = hs.message .. " to " .. sync.revision
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
