"""Plan and its views, publish and git, GitHub, the hub's app-of-apps, CODEOWNERS."""
