"""Run a Python program (a Code tool call) in a sandbox and get back the figures it drew.
Pure: no Django. The layers and what they do not cover: docs/reference/sandbox.md."""

from .result import SandboxLimits, SandboxResult
from .run import run_code

__all__ = ["SandboxLimits", "SandboxResult", "run_code"]
