-- Health of the NVIDIA Network Operator's NicClusterPolicy (mellanox.com/v1alpha1). From Mellanox/network-operator
-- tag v26.4.1, commit 85afd6d9c6978eb871a3292b9897f49746cc43cd:
--   api/v1alpha1/nicclusterpolicy_types.go: status.state and each status.appliedStates[].state are "ready",
--     "notReady", "ignore" or "error"; status.reason says why in the "error" and "ignore" cases;
--   pkg/state/manager.go: the policy is "ready" once no component is "notReady" or "error", else "notReady";
--   controllers/nic_policy_helpers.go: a component's message is the error of its last sync;
--   controllers/nicclusterpolicy_controller.go: a policy not named nic-cluster-policy is "ignore"d, with a reason.
-- NicClusterPolicy status has no observedGeneration or conditions.
local hs = { status = "Progressing", message = "Waiting for the Network Operator to reconcile the NicClusterPolicy" }
if obj.status == nil or obj.status.state == nil or obj.status.state == "" then
  return hs
end

local function reasonOr(fallback)
  if obj.status.reason ~= nil and obj.status.reason ~= "" then
    return obj.status.reason
  end
  return fallback
end

-- The components in a given state, "name" or "name: message", joined.
local function components(state)
  local out = {}
  if obj.status.appliedStates ~= nil then
    for _, s in ipairs(obj.status.appliedStates) do
      if s.state == state then
        if s.message ~= nil and s.message ~= "" then
          table.insert(out, s.name .. ": " .. s.message)
        else
          table.insert(out, s.name)
        end
      end
    end
  end
  return table.concat(out, "; ")
end

local state = obj.status.state
if state == "ready" then
  hs.status = "Healthy"
  hs.message = "Every component of the NicClusterPolicy is ready"
  return hs
end
if state == "ignore" then
  hs.status = "Degraded"
  hs.message = reasonOr("The Network Operator ignores this NicClusterPolicy")
  return hs
end
if state == "error" then
  hs.status = "Degraded"
  hs.message = reasonOr("The Network Operator failed to reconcile the NicClusterPolicy")
  return hs
end
if state == "notReady" then
  local failed = components("error")
  if failed ~= "" then
    hs.status = "Degraded"
    hs.message = "Components failed: " .. failed
    return hs
  end
  local waiting = components("notReady")
  if waiting ~= "" then
    hs.message = "Components not ready yet: " .. waiting
  else
    hs.message = "Components of the NicClusterPolicy are not ready yet"
  end
  return hs
end
hs.message = "The NicClusterPolicy reports an unknown state: " .. state
return hs
