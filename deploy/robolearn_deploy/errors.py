"""The runtime's one exception type: a bundle or robot problem, said in one line."""


class DeployError(Exception):
    """A bundle that is missing, tampered with, of another version or layout, or an engine that
    cannot run here. The message is one line that says what is wrong and what would be valid."""
