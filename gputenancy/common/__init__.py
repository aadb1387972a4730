"""The shared leaves every stage may use: findings, objects, the subprocess wrapper, YAML, text safety, signals."""
