"""Plan and its views, publish and git, GitHub, ApplicationSet, CODEOWNERS."""
