"""The verifier's result: per check, how many elements it established and the mismatches it found."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import LoweringError

SHOWN = 8          # mismatches quoted per check in the message


class VerificationError(LoweringError):
    """An emitted kernel moves data somewhere other than where it belongs; the message lists the mismatches."""


@dataclass
class Check:
    """One property of the kernel (``name``), the elements it covered, and its mismatches (readable lines)."""

    name: str
    elements: int = 0
    mismatches: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def fail(self, line: str) -> None:
        self.mismatches.append(line)


@dataclass
class Report:
    """All checks of one kernel: ``.ok``, ``.elements`` (total established), ``str()`` a readable summary."""

    kernel: str
    checks: list = field(default_factory=list)
    seconds: float = 0.0

    def check(self, name: str) -> Check:
        c = Check(name)
        self.checks.append(c)
        return c

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def elements(self) -> int:
        return sum(c.elements for c in self.checks)

    def failed(self, name: str) -> bool:
        """Whether the check called ``name`` (or starting with it) found mismatches."""
        return any(not c.ok for c in self.checks if c.name.startswith(name))

    def __str__(self) -> str:
        lines = [f"{self.kernel}: {'verified' if self.ok else 'MISMATCHES'} ({self.elements} elements, "
                 f"{len(self.checks)} checks, {self.seconds:.1f} s)"]
        for c in self.checks:
            lines.append(f"  {'ok  ' if c.ok else 'FAIL'} {c.name}: {c.elements} elements"
                         + (f", {len(c.mismatches)} mismatches" if c.mismatches else ""))
            lines += [f"       {m}" for m in c.mismatches[:SHOWN]]
            if len(c.mismatches) > SHOWN:
                lines.append(f"       ... {len(c.mismatches) - SHOWN} more")
        return "\n".join(lines)

    def raise_if_failed(self) -> Report:
        if not self.ok:
            raise VerificationError(str(self))
        return self
