"""What the launcher raises when a local cluster cannot be given or started."""


class ClusterStartError(RuntimeError):
    """A cluster did not come up; the message carries the end of its log."""


class ClusterSpecError(ValueError):
    """A cluster given as ``ALIAS=PORT`` (flag or environment) that is not one."""
