"""What a sandboxed run may use and what it gives back."""

from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["ok", "error", "timeout", "memory", "forbidden", "no_figure", "unavailable"]


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one run. The wall clock covers the interpreter's start and matplotlib's import;
    CPU time, memory (address space) and open files are per process; `max_processes` counts every
    process and thread of the run; `workdir_mb` bounds the temporary working folder (a tmpfs)."""

    wall_seconds: float = 10.0
    cpu_seconds: int = 5
    memory_mb: int = 512
    max_output_bytes: int = 64 * 1024
    max_image_bytes: int = 5 * 1024 * 1024
    max_processes: int = 8
    max_images: int = 8
    workdir_mb: int = 32

    def __post_init__(self) -> None:
        checks = {
            "wall_seconds": self.wall_seconds > 0,
            "cpu_seconds": self.cpu_seconds >= 1,
            "memory_mb": self.memory_mb >= 64,
            "max_output_bytes": self.max_output_bytes >= 0,
            "max_image_bytes": self.max_image_bytes >= 1024,
            "max_processes": self.max_processes >= 1,
            "max_images": self.max_images >= 1,
            "workdir_mb": self.workdir_mb >= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"sandbox limits out of range: {', '.join(bad)}")


@dataclass(frozen=True)
class SandboxResult:
    """`images` are PNG bytes in the order the program showed or saved its figures; `reason` is a
    short sentence for a failure card (empty when ok); stdout and stderr are cut at the limit."""

    ok: bool
    kind: Kind
    reason: str = ""
    images: list[bytes] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
