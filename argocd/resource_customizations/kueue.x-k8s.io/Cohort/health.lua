-- Argo CD health check for kueue.x-k8s.io Cohort.
--
-- Kueue gives a Cohort no conditions: its status holds only fair-sharing data
-- (status.fairSharing.weightedShare). A Cohort that exists is Healthy; the
-- ClusterQueues in it report through their own Active condition.

local hs = {}
hs.status = "Healthy"
hs.message = "Cohort exists; Kueue reports no conditions for Cohorts"
return hs
