"""Tool versions: session pins, canary rollouts and their automatic rollback (see rollout.py)."""

from runtime.versions.rollout import BUCKETS, CanaryMonitor, RolloutTable, compile_rollout

__all__ = ["BUCKETS", "CanaryMonitor", "RolloutTable", "compile_rollout"]
