-- Argo CD health check for argoproj.io Application: the health the Application reports in
-- its status, as Argo CD's documentation gives it for the app-of-apps pattern ("Argo CD App
-- health", removed from the defaults in Argo CD 1.8). With it, the app-of-apps waits in each
-- sync wave until the Applications of that wave are Healthy: gputenancy-<cluster> (wave 0) is
-- created only once kueue-<cluster> (wave -3) is Healthy, so the queues wait for Kueue.
--
--   no status.health          -> Progressing
--   status.health.status      -> that status, with its message
--
-- Uses only what Argo CD loads for argocd-cm scripts (base and table libraries).

local hs = {}
hs.status = "Progressing"
hs.message = ""
if type(obj.status) == "table" and type(obj.status.health) == "table" then
  local health = obj.status.health
  if type(health.status) == "string" and health.status ~= "" then
    hs.status = health.status
  end
  if type(health.message) == "string" then
    hs.message = health.message
  end
end
return hs
