"""One workflow run's state: what each step reported, what completed, what was copied, and what expressions read.

Its own module so that compensation (:mod:`runtime.workflow.compensate`, which reads and adds to a run's state) and
the runner (:mod:`runtime.workflow.run`, whose :class:`~runtime.workflow.run.Run` is this state with its scheduling,
and which calls compensation) do not import each other. The pipeline is handed in (``run_call``): the workflow
modules do not import it, since the pipeline runs workflow tools.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from runtime.pipeline.env import CallRunner, TurnEnv
from runtime.policy.cel import get_engine
from runtime.workflow.compile import CompiledWorkflow
from runtime.workflow.restore import Backup
from runtime.workflow.result import CompensationReport, StepReport, plain
from runtime.workflow.runlog import RunLog
from runtime.workflow.templates import WORKFLOW_VARIABLES, Scope


class RunState:
    """One run's state: what each step reported, what completed, what was copied."""

    def __init__(
        self,
        workflow: CompiledWorkflow,
        arguments: dict[str, Any],
        env: TurnEnv,
        run_id: str,
        log: RunLog | None,
        run_call: CallRunner,
    ) -> None:
        self.workflow = workflow
        self.input = arguments
        self.run_id = run_id
        self.env = env if env.request_id == run_id else dataclasses.replace(env, request_id=run_id)
        self.log = log
        self.run_call = run_call  # each step and compensation is a call through the pipeline
        self.reports: dict[str, StepReport] = {}
        self.views: dict[str, dict[str, Any]] = {}  # what `steps.<id>` reads
        self.data = {"input": arguments, "steps": self.views}  # what expressions read
        self.completed: list[str] = []  # ok steps, in completion order
        self.backups: dict[str, Backup] = {}
        self.compensations: list[CompensationReport] = []  # done before a resume
        self.replayed_compensations = 0  # how many of them a resume read from the journal
        self.stop_reason: str | None = None
        self.compensate = False  # the run undoes its completed steps at the end
        self.blocked = False  # some step did not complete: its dependents are not run
        self.wrote = False  # a step or compensation that changes things started
        self.note: str | None = None

    def scope(self, reads: frozenset[str] | None = None) -> Scope:
        """What expressions see. Plain field chains read the views as they are; a CEL
        activation is made only when an expression needs one, of the steps in ``reads``
        (all when None), converted to plain data then."""
        return Scope(self.data, reads, self._activation)

    def _activation(self, data: dict[str, Any], reads: frozenset[str] | None) -> Any:
        views = data["steps"]
        if reads is None or "*" in reads:
            reads = frozenset(views)
        steps = {k: plain(views[k]) for k in reads if k in views}
        engine = get_engine(self.env.snapshot.cel_engine)
        return engine.activation({"input": data["input"], "steps": steps}, WORKFLOW_VARIABLES)
