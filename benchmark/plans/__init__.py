"""m&m's-style tool plans: parsing (JSON and code form) and rule verification. No Django here."""

from benchmark.plans.parse import (
    Finding,
    ParsedPlan,
    PlanFormatError,
    Step,
    parse_plan,
    plan_to_code,
    plan_to_code_lines,
    plan_to_solve_code,
)
from benchmark.plans.verify import Toolset, load_toolset, toolset_from_mapping, verify_plan

__all__ = [
    "Finding",
    "ParsedPlan",
    "PlanFormatError",
    "Step",
    "Toolset",
    "load_toolset",
    "parse_plan",
    "plan_to_code",
    "plan_to_code_lines",
    "plan_to_solve_code",
    "toolset_from_mapping",
    "verify_plan",
]
