"""A testing kit for apps that embed toolrt.

- :class:`ScriptedAnthropic`, :class:`ScriptedOpenAI`: stand-ins for the model clients,
  returning scripted assistant messages as the SDKs' own response types.
- :func:`runtime_from_yaml`, :func:`snapshot_from_yaml`, :class:`ConfigFolder`: a
  Runtime or snapshot from YAML text inside a test, with a workspace and a state
  directory of its own (no files of the app's needed, nothing left behind).
- :class:`FakeTool`: a handler standing in for a tool, recording its calls and
  answering on cue (return a value, raise, wait for an event, hang until the tool's
  timeout).

Nothing here is imported by the runtime itself; it is for the app's test suite.
"""

from runtime.testing.clients import ScriptedAnthropic, ScriptedOpenAI
from runtime.testing.config import ConfigFolder, runtime_from_yaml, snapshot_from_yaml
from runtime.testing.fakes import Cue, FakeCall, FakeTool

__all__ = [
    "ConfigFolder",
    "Cue",
    "FakeCall",
    "FakeTool",
    "ScriptedAnthropic",
    "ScriptedOpenAI",
    "runtime_from_yaml",
    "snapshot_from_yaml",
]
