"""The base config of the workflow tests: real tools (python handlers beside the
config, command tools, the workspace file tools)."""

from __future__ import annotations

TOOLS_MODULE = '''
import json
import os
import pathlib
import time

from runtime.errors import ToolError


def _root(context):
    return pathlib.Path(context.workspace_root)


def log(args, context):
    """Append a line to log.txt (a compensation log)."""
    with open(_root(context) / "log.txt", "a", encoding="utf-8") as handle:
        handle.write(args["text"] + "\\n")
    return "logged " + args["text"]


def fail(args, context):
    raise ToolError(args.get("message", "this step fails on purpose"))


def rendezvous(args, context):
    """Make a marker, then wait for the other step's marker: alone, it gives up."""
    root = _root(context)
    (root / ("marker-" + args["me"])).write_text("here")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if (root / ("marker-" + args["other"])).exists():
            return "met " + args["other"]
        time.sleep(0.005)
    raise ToolError("never met " + args["other"])


def interval(args, context):
    """Record when it ran, to show that writes do not overlap."""
    start = time.monotonic()
    time.sleep(0.05)
    end = time.monotonic()
    with open(_root(context) / "intervals.txt", "a", encoding="utf-8") as handle:
        handle.write(json.dumps([args["name"], start, end]) + "\\n")
    return args["name"]


def flaky(args, context):
    """Fail until it has been called `times` times."""
    counter = _root(context) / ("count-" + args["name"])
    count = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(count))
    if count < args["times"]:
        raise RuntimeError("flaky failure " + str(count))
    return {"count": count}


def echo(args, context):
    return {"echo": args.get("value"), "n": args.get("n", 0)}
'''

CONFIG = """
apiVersion: toolrt/v1
kind: Include
metadata: {name: packs}
spec: {packs: [workspace-tools, redaction-default, output-default, builtin-tools]}
---
apiVersion: toolrt/v1
kind: Policy
metadata: {name: wf-policy}
spec:
  rules:
    - {name: ask-guarded, effect: ask, tools: [guarded]}
    - {name: allow-all, effect: allow, tools: ["*"]}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: log}
spec:
  description: Append a line to log.txt.
  handler: python:wftools:log
  input_schema: {type: object, additionalProperties: false, required: [text], properties: {text: {type: string}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: guarded}
spec:
  description: Append a line to log.txt, after asking.
  handler: python:wftools:log
  input_schema: {type: object, additionalProperties: false, required: [text], properties: {text: {type: string}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: fail}
spec:
  description: Always fails.
  handler: python:wftools:fail
  input_schema: {type: object, properties: {message: {type: string}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: rendezvous}
spec:
  description: Waits for another step.
  handler: python:wftools:rendezvous
  read_only: true
  input_schema: {type: object, required: [me, other], properties: {me: {type: string}, other: {type: string}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: interval}
spec:
  description: Records when it ran.
  handler: python:wftools:interval
  input_schema: {type: object, required: [name], properties: {name: {type: string}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: flaky}
spec:
  description: Fails a few times.
  handler: python:wftools:flaky
  read_only: true
  input_schema: {type: object, required: [name, times], properties: {name: {type: string}, times: {type: integer}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: echo}
spec:
  description: Echoes.
  handler: python:wftools:echo
  read_only: true
  idempotent: true
  input_schema: {type: object, properties: {value: {}, n: {type: integer}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: sleeper}
spec:
  description: Sleeps in a subprocess.
  handler: {command: {argv: [sleep, "{seconds}"]}}
  input_schema: {type: object, required: [seconds], properties: {seconds: {type: string}}}
---
apiVersion: toolrt/v1
kind: Tool
metadata: {name: shout}
spec:
  description: Prints its text in a subprocess.
  handler: {command: {argv: [printf, "%s", "{text}"]}}
  read_only: true
  input_schema: {type: object, required: [text], properties: {text: {type: string}}}
"""
