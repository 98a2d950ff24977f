-- Argo CD health of an apps/v1 Deployment that knows gray rollouts (kubectl-gray).
--
-- gray-controller reports a gray rollout in two Deployment conditions: GrayHeld (True while
-- held, else False with the phase as reason) and the standard Stalled (True while Degraded,
-- Invalid or Aborted). They are read before spec.paused, which a gray rollout sets for its own
-- reasons (the hold, the takeover of alongside mode). A pause of the Deployment's user reads
-- Suspended, as Argo CD reads any paused Deployment, where the fields tell it from ours (see
-- docs/gitops.md). A Deployment without kubegray.io/percent, or one gray-controller has not
-- reported on yet, gets exactly Argo CD's built-in Deployment check.
--
-- Argo CD runs health scripts without Lua's string library: conditions, numbers and which
-- annotations are there are read, and of kubegray.io/status only its start, which strings compared
-- whole can match (servesNow). A condition's reason and message are optional in the API, so
-- neither is concatenated unless it is there.

local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

-- explain is "<reason>: <message>" of a condition, or whichever of the two it has.
local function explain(c)
  if c.reason == nil or c.reason == "" then
    return c.message
  end
  if c.message == nil or c.message == "" then
    return c.reason
  end
  return c.reason .. ": " .. c.message
end

local function behindGeneration()
  local status = obj.status or {}
  return (obj.metadata.generation or 0) > (status.observedGeneration or 0)
end

-- Argo CD's built-in Deployment check (gitops-engine pkg/health/health_deployment.go).
-- ignorePaused: a completed gray rollout that --takeover=eager keeps paused is not suspended.
local function builtin(ignorePaused)
  local spec = obj.spec or {}
  local status = obj.status or {}
  if spec.paused == true and not ignorePaused then
    return { status = "Suspended", message = "Deployment is paused" }
  end
  if behindGeneration() then
    return { status = "Progressing", message = "Waiting for rollout to finish: observed deployment generation less than desired generation" }
  end
  local updated = status.updatedReplicas or 0
  local replicas = status.replicas or 0
  local available = status.availableReplicas or 0
  local progressing = condition("Progressing")
  if progressing ~= nil and progressing.reason == "ProgressDeadlineExceeded" then
    return { status = "Degraded", message = "Deployment \"" .. (obj.metadata.name or "") .. "\" exceeded its progress deadline" }
  end
  if spec.replicas ~= nil and updated < spec.replicas then
    return { status = "Progressing", message = "Waiting for rollout to finish: " .. updated .. " out of " .. spec.replicas .. " new replicas have been updated..." }
  end
  if replicas > updated then
    return { status = "Progressing", message = "Waiting for rollout to finish: " .. (replicas - updated) .. " old replicas are pending termination..." }
  end
  if available < updated then
    return { status = "Progressing", message = "Waiting for rollout to finish: " .. available .. " of " .. updated .. " updated replicas are available..." }
  end
  return { status = "Healthy" }
end

local annotations = obj.metadata.annotations or {}

-- takenOver: alongside mode runs the rollout itself, paused on Recreate with the Deployment's
-- strategy saved; that pause is the takeover's, and the user's own is kept in kubegray.io/paused.
local function takenOver()
  local spec = obj.spec or {}
  return spec.paused == true and annotations["kubegray.io/strategy"] ~= nil and (spec.strategy or {}).type == "Recreate"
end

-- servesNow is the set of requests kubegray.io/status serves for the generation in metadata:
-- the status starts with {"serves":[<requests>],"observedGeneration":<generation>, (pkg/grayapi
-- writes these two first, the requests once each in the order below). Without the string library
-- the JSON cannot be parsed, but a list of six names in a fixed order has only 64 forms: each is
-- built (bit i of the number says whether request i is in it) and tested as a prefix, s starting
-- with p exactly when p <= s < p .. "\255" (byte-wise, and no byte of the JSON is 0xFF). It is
-- false for a status of another generation (a template gray-controller has not reported on yet),
-- nil for a status without serves (written before the field existed) or none.
local function servesNow()
  local status = annotations["kubegray.io/status"]
  local start = '{"serves":['
  if status == nil or not (status >= start and status < start .. "\255") then
    return nil
  end
  local requests = { "next", "full", "abort", "undo", "retry", "unpause" }
  local generation = tostring(obj.metadata.generation or 0)
  for form = 0, 63 do
    local listed, quoted = {}, {}
    local bits = form
    for i = 1, #requests do
      if bits % 2 == 1 then
        listed[#listed + 1] = requests[i]
        quoted[#quoted + 1] = '"' .. requests[i] .. '"'
      end
      bits = (bits - bits % 2) / 2
    end
    local prefix = start .. table.concat(quoted, ",") .. '],"observedGeneration":' .. generation .. ","
    if status >= prefix and status < prefix .. "\255" then
      local serves = {}
      for _, request in ipairs(listed) do
        serves[request] = true
      end
      return serves
    end
  end
  return false
end

local held = condition("GrayHeld")
if annotations["kubegray.io/percent"] == nil or held == nil then
  return builtin(false)
end
if behindGeneration() then
  return { status = "Progressing", message = "Waiting for rollout to finish: observed deployment generation less than desired generation" }
end
-- Degraded, Invalid and Aborted set Stalled; an aborted rollout stays Degraded, with the
-- failure and the way back in its message, until a retry or a new template.
local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  return { status = "Degraded", message = explain(stalled) }
end
if held.status ~= "True" and held.reason == "Aborted" then
  return { status = "Degraded", message = explain(held) }
end
local serves = servesNow()
if held.status == "True" then
  -- A hold of a template gray-controller has not reported on yet is the previous template's: in
  -- alongside modes the built-in controller observes a new generation first and carries GrayHeld
  -- over. The new template is a rollout from the write that applied it.
  if serves == false then
    return { status = "Progressing", message = "Waiting for rollout to finish: gray-controller has not reported on generation " ..
      tostring(obj.metadata.generation) .. " yet" }
  end
  return { status = "Suspended", message = held.message }
end
-- No hold stands once Complete: a pause is the user's, unless it is the takeover's own that
-- --takeover=eager keeps.
if held.reason == "Complete" then
  return builtin(takenOver() and annotations["kubegray.io/paused"] == nil)
end
if takenOver() and annotations["kubegray.io/paused"] ~= nil then
  return { status = "Suspended", message = held.message }
end
-- In instead mode our hold is spec.paused as the user's pause is. Our hold serves "next" from
-- the moment it is taken, settled or not; a pause gray-controller has reported on that does not
-- serve it is the user's. Before that report it reads Progressing.
if (obj.spec or {}).paused == true and not takenOver() and serves and not serves.next then
  return { status = "Suspended", message = held.message }
end
return { status = "Progressing", message = held.message }
