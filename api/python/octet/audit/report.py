"""The audit's report: per target and device, every operation with its
verdict, counts and disagreement classes (three example inputs each), as
text and as JSON (the schema is in docs/audit.md)."""

import json

# Verdicts of an operation, best first; the worst of its classes decides.
BIT_EXACT, WITHIN_BOUND, CONVENTION, WRONG = "bit-exact", "within bound", "convention difference", "wrong"
NOT_SUPPORTED = "not supported"
SCHEMA_VERSION = 1
EXAMPLES_PER_CLASS = 3


class Operation:
    """The result of one operation's check. `add` records disagreements of
    one class; `checked` counts every compared element."""

    def __init__(self, name, kind, **details):
        self.name, self.kind, self.details = name, kind, dict(details)
        self.checked = 0
        self.within_bound = 0
        self.classes = {}
        self.unsupported = None

    def add(self, verdict, name, rule, count, examples):
        if verdict not in (CONVENTION, WRONG):
            raise ValueError(f"verdict must be {CONVENTION!r} or {WRONG!r}; got {verdict!r}")
        entry = self.classes.setdefault((verdict, name), {"verdict": verdict, "class": name, "rule": rule,
                                                          "count": 0, "examples": []})
        entry["count"] += int(count)
        room = EXAMPLES_PER_CLASS - len(entry["examples"])
        entry["examples"].extend(examples[:room])

    @property
    def verdict(self):
        if self.unsupported is not None:
            return NOT_SUPPORTED
        verdicts = {c["verdict"] for c in self.classes.values()}
        if WRONG in verdicts:
            return WRONG
        if CONVENTION in verdicts:
            return CONVENTION
        return WITHIN_BOUND if self.within_bound else BIT_EXACT

    def counts(self):
        wrong = sum(c["count"] for c in self.classes.values() if c["verdict"] == WRONG)
        convention = sum(c["count"] for c in self.classes.values() if c["verdict"] == CONVENTION)
        return {"checked": self.checked, "bit_exact": self.checked - wrong - convention - self.within_bound,
                "within_bound": self.within_bound, "convention": convention, "wrong": wrong}

    def to_json(self):
        out = {"name": self.name, "kind": self.kind, "verdict": self.verdict, "counts": self.counts(),
               "classes": sorted(self.classes.values(), key=lambda c: (c["verdict"] != WRONG, c["class"])),
               "details": self.details}
        if self.unsupported is not None:
            out["reason"] = self.unsupported
        return out


class TargetResult:
    """One target on one device: run (with its operations) or not run (with
    the reason and, for a missing package, the install command)."""

    def __init__(self, target, device, version=None, status="run", reason=None, install=None):
        self.target, self.device, self.version = target, device, version
        self.status, self.reason, self.install = status, reason, install
        self.operations = []

    @property
    def wrong(self):
        return any(op.verdict == WRONG for op in self.operations)

    def to_json(self):
        return {"target": self.target, "device": self.device, "version": self.version, "status": self.status,
                "reason": self.reason, "install": self.install,
                "operations": [op.to_json() for op in self.operations]}


class Report:
    def __init__(self, mode, octet_version, environment):
        self.mode, self.octet_version, self.environment = mode, octet_version, environment
        self.targets = []

    @property
    def exit_status(self):
        """1 when any operation of any target is wrong, else 0."""
        return 1 if any(t.wrong for t in self.targets) else 0

    def to_json(self):
        return {"schema_version": SCHEMA_VERSION, "tool": "octet.audit", "octet_version": self.octet_version,
                "mode": self.mode, "environment": self.environment,
                "targets": [t.to_json() for t in self.targets], "exit_status": self.exit_status}

    def dumps(self):
        return json.dumps(self.to_json(), indent=1)

    def text(self):
        lines = [f"octet.audit (octet {self.octet_version}, {self.mode} mode)"]
        for t in self.targets:
            head = f"target {t.target} {t.version or ''} on {t.device}".replace("  ", " ")
            if t.status != "run":
                lines.append(f"{head}: not run: {t.reason}" + (f" (install: {t.install})" if t.install else ""))
                continue
            lines.append(head)
            for op in t.operations:
                c = op.counts()
                if op.unsupported is not None:
                    lines.append(f"  {op.name:<52} {NOT_SUPPORTED}: {op.unsupported}")
                    continue
                lines.append(f"  {op.name:<52} {op.verdict:<22} checked {c['checked']}, bit-exact {c['bit_exact']}"
                             + (f", within bound {c['within_bound']}" if c["within_bound"] else "")
                             + (f", convention {c['convention']}" if c["convention"] else "")
                             + (f", wrong {c['wrong']}" if c["wrong"] else ""))
                for key in ("mode", "max_ratio_to_bound"):
                    if key in op.details:
                        lines.append(f"      {key.replace('_', ' ')}: {op.details[key]}")
                for cls in op.to_json()["classes"]:
                    lines.append(f"      {cls['verdict']}: {cls['class']} ({cls['count']}): {cls['rule']}")
                    for ex in cls["examples"]:
                        lines.append("        " + ", ".join(f"{k} {v}" for k, v in ex.items()))
        wrong = [f"{t.target}/{op.name}" for t in self.targets for op in t.operations if op.verdict == WRONG]
        lines.append("wrong: " + (", ".join(wrong) if wrong else "none"))
        return "\n".join(lines)
