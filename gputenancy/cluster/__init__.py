"""Reading a cluster: a `kubectl get -o yaml` dump or the real `kubectl` (read verbs only), and the one
normalisation that makes what the server stores comparable with what the pipeline renders. Shared by
`import` (adopt/), `status` (live/) and `admit` (admission/)."""
