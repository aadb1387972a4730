-- Argo CD health check for kueue.x-k8s.io ResourceFlavor.
--
-- A ResourceFlavor has no status subresource, so one that exists is Healthy.
-- A ClusterQueue that names a missing flavor reports Active=False with reason
-- FlavorNotFound on itself.

local hs = {}
hs.status = "Healthy"
hs.message = "ResourceFlavor exists; Kueue reports no status for ResourceFlavors"
return hs
