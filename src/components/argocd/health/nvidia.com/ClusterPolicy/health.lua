-- Health of the NVIDIA GPU Operator's ClusterPolicy (nvidia.com/v1): ready only when the operator reports every
-- operand ready and it has found GPU nodes, so the waves after it (queues, tenants, monitoring) start once GPUs are
-- advertised. From NVIDIA/gpu-operator tag v26.7.0, commit 10ee5b3638b89e11e949412aafa5ba99279c3721:
--   api/nvidia/v1/clusterpolicy_types.go: status.state is "ready", "notReady", "ignored" (a second ClusterPolicy:
--     only the oldest one is reconciled) or "disabled";
--   internal/conditions/clusterpolicy.go: conditions "Ready" and "Error", one True and the other False;
--   controllers/clusterpolicy_controller.go: state "ready" with Ready's reason "NoGPUNodes" (no GPU node found, the
--     operator waits for nodes to join) or "NFDLabelsMissing" (Node Feature Discovery labelled no node yet), and
--     state "notReady" with Error's reason "OperandNotReady" (operands rolling out) or "ReconcileFailed".
-- ClusterPolicy status has no observedGeneration. A cluster that needs no GPU node of its own (a MultiKueue manager,
-- whose queues run every job on its workers) says why in the annotation gpu-cluster.dev/gpu-nodes-optional: there,
-- "ready" without GPU nodes is Healthy, where elsewhere the check waits for them to join.
local hs = { status = "Progressing", message = "Waiting for the GPU Operator to reconcile the ClusterPolicy" }
if obj.status == nil or obj.status.state == nil or obj.status.state == "" then
  return hs
end

local function condition(kind)
  if obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function messageOf(c, fallback)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return fallback
end

local state = obj.status.state
local ready = condition("Ready")
local err = condition("Error")

if state == "ready" then
  if ready ~= nil and (ready.reason == "NoGPUNodes" or ready.reason == "NFDLabelsMissing") then
    hs.message = messageOf(ready, "The GPU Operator has found no GPU node yet")
    local optional = (obj.metadata.annotations or {})["gpu-cluster.dev/gpu-nodes-optional"]
    if optional ~= nil and optional ~= "" then
      hs.status = "Healthy"
      hs.message = hs.message .. " None is needed: " .. optional .. "."
    end
    return hs
  end
  hs.status = "Healthy"
  hs.message = messageOf(ready, "Every component of the ClusterPolicy is ready")
  return hs
end
if state == "ignored" then
  hs.status = "Degraded"
  hs.message = "The GPU Operator ignores this ClusterPolicy: it reconciles only the oldest one, and there may be only one"
  return hs
end
if state == "disabled" then
  hs.status = "Healthy"
  hs.message = "The ClusterPolicy is disabled: none of its components runs"
  return hs
end
if state == "notReady" then
  if err ~= nil and err.status == "True" and err.reason == "ReconcileFailed" then
    hs.status = "Degraded"
    hs.message = messageOf(err, "The GPU Operator failed to reconcile the ClusterPolicy")
    return hs
  end
  hs.message = messageOf(err, "Components of the ClusterPolicy are not ready yet")
  return hs
end
hs.message = "The ClusterPolicy reports an unknown state: " .. state
return hs
