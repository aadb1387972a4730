-- Argo CD health check for kueue.x-k8s.io MultiKueueCluster, read from the Active condition.
--
--   no Active condition                          -> Progressing
--   observedGeneration < metadata.generation     -> Progressing (Kueue has not seen the current spec)
--   Active=True                                  -> Healthy, with Kueue's message
--   Active=False                                 -> Degraded, "reason: message"
--     (BadConfig: kubeconfig Secret missing or invalid; ClientConnectionFailed: worker unreachable)
--   Active with any other status                 -> Progressing
--
-- Uses only what Argo CD loads for argocd-cm scripts (base and table libraries):
-- no string or math functions.

local hs = {}

local function nonEmpty(value)
  return type(value) == "string" and value ~= ""
end

local function textOr(value, fallback)
  if nonEmpty(value) then
    return value
  end
  return fallback
end

local function describe(condition, fallback)
  if nonEmpty(condition.reason) and nonEmpty(condition.message) then
    return condition.reason .. ": " .. condition.message
  end
  return textOr(condition.reason, textOr(condition.message, fallback))
end

local function findActive(o)
  if type(o.status) ~= "table" or type(o.status.conditions) ~= "table" then
    return nil
  end
  for _, condition in ipairs(o.status.conditions) do
    if type(condition) == "table" and condition.type == "Active" then
      return condition
    end
  end
  return nil
end

local generation = nil
if type(obj.metadata) == "table" and type(obj.metadata.generation) == "number" then
  generation = obj.metadata.generation
end

local active = findActive(obj)
if active == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for Kueue to report the Active condition"
  return hs
end

local observed = active.observedGeneration
if generation ~= nil and type(observed) == "number" and observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for Kueue to observe generation " .. generation
    .. " (Active condition is from generation " .. observed .. ")"
  return hs
end

if active.status == "True" then
  hs.status = "Healthy"
  hs.message = textOr(active.message, "MultiKueueCluster is active")
  return hs
end

if active.status == "False" then
  hs.status = "Degraded"
  hs.message = describe(active, "MultiKueueCluster is not active")
  return hs
end

hs.status = "Progressing"
hs.message = "Active condition is " .. textOr(active.status, "without status") .. ": "
  .. describe(active, "no reason given")
return hs
