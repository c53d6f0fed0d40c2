-- Health of an Argo CD Application, as its parent (an app-of-apps) sees it: a sync wave of the parent waits until
-- the Applications of the wave before are Healthy (gitops-engine/pkg/sync/sync_context.go Sync: a task completes only
-- when its object is Healthy, fails only when it is Degraded; Progressing, Suspended, Missing and Unknown wait).
-- Argo CD has no built-in health for Applications since v1.8 (argoproj/argo-cd docs/operator-manual/health.md, "Argocd
-- App", at tag v3.5.1); this is the check documented there, plus what a parent must not miss, read from argo-cd at tag
-- v3.5.1, commit 109ca7ca71139e514114499d294a492e7910a965:
--   * a child whose sync operation is requested (`operation`, set until the controller starts it) or runs
--     (status.operationState.phase "Running" or "Terminating", no finishedAt) is Progressing: its health is still that
--     of its previous revision;
--   * a failed attempt waiting for its retry (phase "Running" with finishedAt set: controller/appcontroller.go
--     processRequestedAppOperation) is Degraded with the operation's message when it is of the source the child has
--     now; of an older source (the parent applied a new commit while the child retried the old one: a retry syncs the
--     source its operation was started with, the revision refreshed from that source's targetRevision) it is
--     Progressing: once those retries end, its automated sync takes the new source;
--   * a child the controller has not compared with the source it was given yet (spec.source differs from
--     status.sync.comparedTo.source: what appcontroller.go currentSourceEqualsSyncedSource refreshes on) is
--     Progressing: its sync status and health are those of its previous source. This is the observedGeneration check
--     of an Application (controller/sync.go delayBetweenSyncWaves names it as the real guard);
--   * a child that is OutOfSync with automated sync on and whose last sync was not of the compared revision and
--     source is Progressing: its automated sync is about to start (appcontroller.go autoSync, alreadyAttemptedSync),
--     unless that sync would only prune and automated.prune is off (autoSync skips it: "need to prune extra resources
--     only but automated prune is disabled", read from status.resources[].requiresPruning): then nothing is coming,
--     and its health is what it is;
--   * a child Argo CD cannot compare (status.sync.status "Unknown": it cannot build or read its source) is Degraded;
--   * a child whose sync of the revision and source it has now Succeeded while its sync status is not Synced, and
--     that Argo CD has not compared since (status.reconciledAt not later than the operation's finishedAt), is
--     Progressing: its sync status and health are still those of the comparison before the sync;
--   * a child whose last sync of the revision and source it has now failed (phase "Failed" or "Error") and that is
--     not Synced is Degraded, with the operation's message, even when its old objects stay Healthy (controller/health.go
--     leaves an object that was never created out of the child's own health), so the parent's sync fails visibly and
--     retries instead of going ahead on top of it; what the API server refused is in the message (a dry run that fails
--     names no object in the operation's message: each refused object's is in status.operationState.syncResult).
-- A child rendered by gpu-cluster-manifests says how long its parent may wait for it (the annotation
-- gpu-cluster.dev/wave-wait-seconds, from gitops.waveWait): a sync that has run that long, and a health other than
-- Healthy that has lasted that long after its last sync finished (Progressing: a GPU node NotReady, an operand roll
-- that hangs; Degraded; Missing), are then reported Healthy with what they are in the message, so the parent's later
-- waves go ahead and its sync ends, free to take the next commit; Suspended (held on purpose: a Kueue queue held by
-- its stopPolicy) never holds the waves. A failed sync of the child's own source is never waited past: its fix is a commit.
-- Times compare as strings: metav1.Time is written in UTC as RFC 3339 ("2026-12-01T10:02:01Z"), and Argo CD's Lua has
-- no string library (util/lua/lua.go; os.time and os.date are its safe os, util/lua/oslib_safe.go, required below).
-- An Application that syncs itself must not be waited on with this check: while its own sync runs, it is Progressing
-- (the testdata "own-sync-running"), and a sync wave waits for the Applications of the waves before to be Healthy
-- (only the health aggregation of controller/health.go skips an app that manages itself, not the sync). Fields:
-- pkg/apis/application/v1alpha1/types.go (Application.Operation, ApplicationStatus.Sync.ComparedTo and Revision,
-- Resources[].RequiresPruning, Health.Status, OperationState.Phase, Message, StartedAt, FinishedAt and SyncResult) and
-- gitops-engine/pkg/sync/common/types.go (the phases). AppHealthStatus.Message is deprecated and unset in v3.

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

-- Argo CD v3.5.1 has no global os (OpenSafeOs registers time and date under "table", util/lua/oslib_safe.go): a
-- script reaches them as its own scripts do, through the module it preloads (util/lua/lua.go PreloadModule)
local os = require("os")

local hs = { status = "Progressing", message = "Waiting for the Application to report its health" }
local meta = obj.metadata or {}
local annotations = meta.annotations or {}
local name = meta.name or ""
-- nil for an Application this toolkit did not render: its parent waits as long as it takes
local wait = tonumber(annotations["gpu-cluster.dev/wave-wait-seconds"])

-- The time `seconds` ago in metav1.Time's form. os.date formats a given time in the local zone (gopher-lua's "!" is
-- lost once a time is passed), so the zone's offset, local minus UTC now, is taken off first.
local function ago(seconds)
  local now = os.time()
  local offset = now - os.time(os.date("!*t"))
  return os.date("%Y-%m-%dT%H:%M:%SZ", now - seconds - offset)
end
-- Whether the wait that started at `since` has lasted the child's bound.
local function waited(since)
  return wait ~= nil and since ~= nil and since ~= "" and since < ago(wait)
end
-- What the API server refused in a sync (status.operationState.syncResult.resources[], result "SyncFailed"): a sync
-- that fails its dry run says only "one or more objects failed to apply (dry run)" (gitops-engine sync_context.go), and
-- each refused object's message is in its result.
local function refused(op)
  local out = ""
  local n = 0
  for _, r in ipairs((op.syncResult or {}).resources or {}) do
    if r.status == "SyncFailed" and r.message ~= nil and r.message ~= "" then
      n = n + 1
      if n <= 3 then
        local where = r.name or ""
        if r.namespace ~= nil and r.namespace ~= "" then
          where = r.namespace .. "/" .. where
        end
        if out ~= "" then
          out = out .. "; "
        end
        out = out .. (r.kind or "") .. " " .. where .. ": " .. r.message
      end
    end
  end
  if n > 3 then
    out = out .. "; and " .. (n - 3) .. " more"
  end
  if out ~= "" then
    out = "; refused: " .. out
  end
  return out
end

local function goAhead(what)
  hs.status = "Healthy"
  hs.message = what .. ": the waves after it go ahead"
  return hs
end

if obj.status == nil then
  return hs
end

local spec = obj.spec or {}
local sync = obj.status.sync or {}
local compared = sync.comparedTo or {}
local op = obj.status.operationState

if op ~= nil and (op.phase == "Running" or op.phase == "Terminating") then
  local text = ""
  if op.message ~= nil and op.message ~= "" then
    text = ": " .. op.message
  end
  if op.phase == "Running" and op.finishedAt ~= nil and op.finishedAt ~= "" then
    local attempt = op.syncResult or {}
    local started = (op.operation or {}).sync or {}
    local source, sources = attempt.source, attempt.sources
    if empty(source) and empty(sources) then
      source, sources = started.source, started.sources
    end
    if empty(source) and empty(sources) or same(source, spec.source) and same(sources, spec.sources) then
      hs.status = "Degraded"
      hs.message = "Its sync failed and is retried" .. text .. refused(op)
      return hs
    end
    hs.message = "Its sync of an earlier source failed and is retried" .. text
      .. "; its automated sync of the source it has now starts when those retries end (argocd app terminate-op " .. name
      .. " ends them)"
    if waited(op.startedAt) then
      return goAhead(hs.message .. "; started more than " .. wait .. "s ago")
    end
    return hs
  end
  hs.message = "The Application is syncing" .. text
  if waited(op.startedAt) then
    return goAhead("Its sync has run for more than " .. wait .. "s (since " .. op.startedAt .. text
      .. "; argocd app terminate-op " .. name .. " ends it)")
  end
  return hs
end
if obj.operation ~= nil and obj.operation.sync ~= nil then
  hs.message = "A sync of the Application is requested"
  return hs
end

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
-- processRequestedAppOperation (controller/appcontroller.go) writes the finished operation first and only then asks for
-- a comparison (CompareWithLatest, which stamps status.reconciledAt): until that lands, the sync status and health are
-- those compared before the sync, the old objects' (a stale read the parent must not take for the new revision's
-- health; a ServerSideDiff comparison takes seconds). A comparison stamped in a later second than the sync's end is
-- the new one: if that still says OutOfSync, the sync did not converge and the health below is what it is.
if op ~= nil and op.phase == "Succeeded" and attempted and sync.status ~= "Synced" and op.finishedAt ~= nil
    and op.finishedAt ~= "" and (obj.status.reconciledAt == nil or obj.status.reconciledAt <= op.finishedAt) then
  hs.message = "Waiting for Argo CD to compare the Application with its source after its sync (" .. op.finishedAt .. ")"
  if waited(op.finishedAt) then
    return goAhead("Not compared with its source more than " .. wait .. "s after its sync (" .. op.finishedAt .. ")")
  end
  return hs
end
local policy = spec.syncPolicy or {}
local automated = policy.automated ~= nil and policy.automated.enabled ~= false
-- autoSync: with automated.prune off, a sync that would only prune is never started
local pruneOnly = false
if automated and policy.automated.prune ~= true and sync.status == "OutOfSync" then
  pruneOnly = true
  for _, r in ipairs(obj.status.resources or {}) do
    if r.status ~= "Synced" and r.requiresPruning ~= true then
      pruneOnly = false
    end
  end
end
if sync.status == "OutOfSync" and automated and not attempted and not pruneOnly then
  hs.message = "Waiting for the automated sync of the Application"
  if sync.revision ~= nil and sync.revision ~= "" then
    hs.message = hs.message .. " to " .. sync.revision
  end
  return hs
end

if op ~= nil and (op.phase == "Failed" or op.phase == "Error") and attempted and sync.status ~= "Synced" then
  hs.status = "Degraded"
  hs.message = "Its sync failed"
  if op.message ~= nil and op.message ~= "" then
    hs.message = "Its sync failed: " .. op.message
  end
  hs.message = hs.message .. refused(op)
  return hs
end

local health = nil
local message = ""
if obj.status.health ~= nil and obj.status.health.status ~= nil and obj.status.health.status ~= "" then
  health = obj.status.health.status
  message = "The Application is " .. health
  if obj.status.health.message ~= nil and obj.status.health.message ~= "" then
    message = obj.status.health.message
  end
end
if pruneOnly then
  message = message .. "; objects removed from its source stay, as automated.prune is off (argocd app sync " .. name
    .. " --prune deletes them)"
end
if health == "Healthy" then
  hs.status = "Healthy"
  hs.message = message
  return hs
end
if health == "Suspended" and wait ~= nil then
  hs.status = "Healthy"
  hs.message = message .. ": held on purpose, the waves after it go ahead"
  return hs
end
local since = meta.creationTimestamp
if op ~= nil and op.finishedAt ~= nil and op.finishedAt ~= "" then
  since = op.finishedAt
end
if health == nil then
  if waited(since) then
    return goAhead("No health reported more than " .. wait .. "s after its last sync (" .. since .. ")")
  end
  return hs
end
if waited(since) then
  return goAhead(health .. " more than " .. wait .. "s after its last sync (" .. since .. "): " .. message)
end
hs.status = health
hs.message = message
return hs
