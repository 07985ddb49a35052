"""Workflows: DAGs of tool calls, each step a real call through the pipeline.

::

    templates.py  argument templates (`${EXPR}`) compiled into CEL programs
    compile.py    a Workflow document compiled into the snapshot, and its lint
    run.py        the runner: scheduling, retries, timeouts, compensation
    restore.py    built-in compensation of file_edit and file_delete steps
    result.py     WorkflowResult: each step's status and duration, what was undone
"""

from runtime.workflow.compile import CompiledStep, CompiledWorkflow
from runtime.workflow.result import CompensationReport, StepReport, WorkflowResult
from runtime.workflow.run import new_run_id, run_named, run_workflow

__all__ = [
    "CompensationReport",
    "CompiledStep",
    "CompiledWorkflow",
    "StepReport",
    "WorkflowResult",
    "new_run_id",
    "run_named",
    "run_workflow",
]
