"""robolearn's built-in tasks. Each is a plugin registered through the `robolearn.tasks` entry
point in pyproject.toml, the same way a third-party task package registers."""
