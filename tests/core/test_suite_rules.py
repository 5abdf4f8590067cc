"""The suite's own rule: a test passes on a busy machine (issue 38 item 25, issue 41).

A test that fails because the machine is busy is a wrong test. Work is measured (CPU time,
operations, bytes), never wall time; events are ordered with barriers and events, never with a
sleep. Only the deadline's own tests (the files ``core_support.DEADLINE_FILES``, run alone with
``-m serial``) may compare the wall clock with a bound: a deadline is a wall-clock promise.

The test files are read with ``ast``. A clock reading is a call of ``time.time``, ``monotonic``
or ``perf_counter`` (or their ``_ns`` forms); names and functions given one are followed. Flagged:

- an upper bound on elapsed wall time in an assertion (``assert took < 2``,
  ``assert time.monotonic() - began < 2``, ``assert time.time() < deadline``, or the same test
  in an ``if`` that fails the test): a busy machine makes it fail. A lower bound (``took >= 0.9``)
  cannot be broken by load and is allowed;
- a poll that gives up after less than ``MIN_GUARD`` seconds (``deadline = time.time() + 5``
  compared with the clock, ``wait_for(..., 2)``): that is a wall-clock bound too;
- a ``time.sleep`` in a test's own body outside a polling loop: a sleep that orders events
  orders them only when the machine is quick enough;
- a ``pytest.mark.timeout`` under ``MIN_HANG_GUARD``: a hang guard is generous, never the assertion.

Waiting for the clock to pass a moment (``while time.time() < moment: sleep``: an expiry, a TTL)
is a lower bound and allowed; so is a poll's guard of ``MIN_GUARD`` seconds or more.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Optional

from core_support import DEADLINE_FILES

ROOT = Path(__file__).resolve().parents[2]
CLOCKS = {"time", "monotonic", "perf_counter", "time_ns", "monotonic_ns", "perf_counter_ns"}
MIN_GUARD = 10.0  # seconds a poll may wait before it gives up: well past any load this suite meets
MIN_HANG_GUARD = 60.0  # a pytest.mark.timeout below this is an assertion on a busy machine's speed
WAITERS = {"wait_for", "_wait_for", "wait_until", "_wait_until"}
UPPER = (ast.Lt, ast.LtE)
LOWER = (ast.Gt, ast.GtE)

# Kinds of a clock-derived value.
INSTANT, DURATION, BOUND = "instant", "duration", "bound"


def suite_files() -> list[Path]:
    roots = [ROOT / "tests", ROOT / "benchmarks", *sorted((ROOT / "plugins").glob("*/tests"))]
    return sorted(p for r in roots if r.is_dir() for p in r.rglob("*.py") if ".venv" not in p.parts)


class _Scope:
    """What a function's (or the module's) names hold: a clock kind per name, the literal seconds
    of a bound; a nested function's scope falls back on its parent's."""

    def __init__(self, node: ast.AST, parent: Optional["_Scope"] = None) -> None:
        self.parent = parent
        self.names: dict[str, str] = {}
        self.bound_secs: dict[str, Optional[float]] = {}
        root = parent.root if parent else self
        self.root: _Scope = root
        if parent is None:
            self.functions: dict[str, str] = {}  # function name -> the kind it returns
            self.clock_aliases = {"time", "_t"}
            self.clock_functions: set[str] = set()
            self.constants: dict[str, float] = {}
            self.defaults: dict[str, float] = {}
            self._module_facts(node)
        own = list(_own_nodes(node))
        for _ in range(4):  # follow assignments and returns to a fixed point
            for stmt in own:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    for target in targets:
                        for name, value in _pairs(target, stmt.value):
                            kind = self.kind(value)
                            if kind and name not in self.names:
                                self.names[name] = kind
                                if kind == BOUND:
                                    self.bound_secs[name] = self.bound_seconds(value)
                if isinstance(stmt, ast.Return) and stmt.value is not None and isinstance(
                        node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    kind = self.kind(stmt.value)
                    if kind:
                        root.functions.setdefault(node.name, kind)

    def _module_facts(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "time":
                self.clock_functions |= {a.asname or a.name for a in node.names if a.name in CLOCKS}
            if isinstance(node, ast.Import):
                self.clock_aliases |= {a.asname for a in node.names if a.name == "time" and a.asname}
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(
                    node.value.value, (int, float)) and not isinstance(node.value.value, bool):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.constants[target.id] = float(node.value.value)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.args[len(node.args.args) - len(node.args.defaults):] + node.args.kwonlyargs
                defaults = list(node.args.defaults) + list(node.args.kw_defaults)
                for arg, default in zip(args, defaults):
                    if isinstance(default, ast.Constant) and isinstance(default.value, (int, float)):
                        self.defaults[arg.arg] = float(default.value)

    def lookup(self, name: str) -> Optional[str]:
        scope: Optional[_Scope] = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def lookup_secs(self, name: str) -> Optional[float]:
        scope: Optional[_Scope] = self
        while scope is not None:
            if name in scope.names:
                return scope.bound_secs.get(name)
            scope = scope.parent
        return None

    def is_clock(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in CLOCKS and isinstance(func.value, ast.Name):
            return func.value.id in self.root.clock_aliases
        return isinstance(func, ast.Name) and func.id in self.root.clock_functions

    def kind(self, node: ast.AST) -> Optional[str]:
        """INSTANT, DURATION or BOUND for a clock-derived expression, else None."""
        if self.is_clock(node):
            return INSTANT
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.Subscript):
            return self.kind(node.value)
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name in ("max", "min", "round", "abs", "float", "sum"):
                kinds = {self.kind(a) for a in node.args} - {None}
                return kinds.pop() if len(kinds) == 1 else (DURATION if kinds else None)
            if name in self.root.functions:
                return self.root.functions[name]
            return None
        if isinstance(node, ast.BinOp):
            left, right = self.kind(node.left), self.kind(node.right)
            if isinstance(node.op, ast.Sub):
                if left in (INSTANT, BOUND) and right in (INSTANT, BOUND):
                    return DURATION
                if left in (INSTANT, BOUND) and right is None:
                    return BOUND
                return left or right
            if isinstance(node.op, ast.Add):
                if INSTANT in (left, right) or BOUND in (left, right):
                    return BOUND
                return left or right
            return left or right
        return None

    def seconds(self, node: ast.AST) -> Optional[float]:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            return self.root.constants.get(node.id, self.root.defaults.get(node.id))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            a, b = self.seconds(node.left), self.seconds(node.right)
            if a is not None and b is not None:
                return a + b if isinstance(node.op, ast.Add) else a * b
        return None

    def bound_seconds(self, node: ast.AST) -> Optional[float]:
        """The literal seconds of ``clock() + N`` (None when not literal)."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for clock, other in ((node.left, node.right), (node.right, node.left)):
                if self.kind(clock) == INSTANT and self.kind(other) is None:
                    return self.seconds(other)
        return None


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes under ``node``, not those of a function defined in it (it has its own scope)."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _own_nodes(child)


def _pairs(target: ast.AST, value: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(name, value) for an assignment; ``a, b = x, y`` pairs them up; ``d[k] = x`` gives ``d``."""
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts):
            yield from _pairs(t, v)
        return
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        target = target.value
    if isinstance(target, ast.Name):
        yield target.id, value


def _fails_the_test(body: list[ast.stmt]) -> bool:
    for stmt in body:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if isinstance(func, ast.Attribute) and func.attr == "fail":
                return True
    return False


def _upper_bounds(scope: _Scope, compare: ast.Compare, failing: bool = False) -> Iterator[str]:
    """The wall-clock upper bounds a comparison asserts (``failing``: it is the failure's condition,
    as in ``if took > 3: pytest.fail()``, which asserts ``took <= 3``)."""
    operands = [compare.left, *compare.comparators]
    for op, left, right in zip(compare.ops, operands, operands[1:]):
        if failing and isinstance(op, (*UPPER, *LOWER)):
            op = ast.GtE() if isinstance(op, ast.Lt) else ast.Gt() if isinstance(op, ast.LtE) else \
                ast.LtE() if isinstance(op, ast.Gt) else ast.Lt()
        if isinstance(op, LOWER):  # a > b is b < a
            left, right, op = right, left, ast.Lt()
        if not isinstance(op, UPPER):
            continue
        small, big = scope.kind(left), scope.kind(right)
        if small == DURATION and big is None:
            yield "an elapsed wall time under a bound"
        elif small == INSTANT and big == BOUND:
            secs = scope.lookup_secs(right.id) if isinstance(right, ast.Name) else scope.bound_seconds(right)
            if secs is None or secs < MIN_GUARD:  # a longer one is a guard against a hang
                yield "the clock before a deadline"


def _short_guard(scope: _Scope, compare: ast.Compare) -> Iterator[str]:
    for operand in [compare.left, *compare.comparators]:
        if isinstance(operand, ast.Name) and scope.lookup(operand.id) == BOUND:
            secs = scope.lookup_secs(operand.id)
            if secs is not None and secs < MIN_GUARD:
                yield f"a poll that gives up after {secs:g} s"


def violations(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{v}" for v in violations_in(path.read_text(), str(path))]


def violations_in(source: str, filename: str = "<test>") -> list[str]:
    """``line: why`` for each wall-clock bound in a test file's source."""
    tree = ast.parse(source, filename=filename)
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, scope: _Scope) -> None:
        for child in _own_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = _Scope(child, scope)
                if child.name.startswith("test"):
                    found.extend((line, "a sleep that orders events") for line in _ordering_sleeps(child.body, inner))
                visit(child, inner)
            else:
                check(child, scope)

    waits: set[int] = set()  # `while clock() < moment:` waits for the clock to pass (a lower bound)

    def check(node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, ast.While) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1 \
                and scope.kind(node.test.left) == INSTANT and isinstance(node.test.ops[0], UPPER):
            waits.add(id(node.test))
        if isinstance(node, (ast.Assert, ast.If)) and (isinstance(node, ast.Assert) or _fails_the_test(node.body)):
            tests = [n for n in ast.walk(node.test) if isinstance(n, ast.Compare)]
            failing = isinstance(node, ast.If)
            found.extend((node.lineno, why) for c in tests for why in _upper_bounds(scope, c, failing))
        if isinstance(node, ast.Compare) and id(node) not in waits:
            found.extend((node.lineno, why) for why in _short_guard(scope, node))
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "timeout" and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) \
                    and func.value.attr == "mark" and node.args:
                secs = scope.seconds(node.args[0])
                if secs is not None and secs < MIN_HANG_GUARD:
                    found.append((node.lineno, f"pytest-timeout as an assertion ({secs:g} s)"))
            given = node.args[1:2] + [k.value for k in node.keywords if k.arg == "timeout"]
            for arg in given if name in WAITERS else []:
                secs = scope.seconds(arg)
                if secs is not None and secs < MIN_GUARD:
                    found.append((node.lineno, f"a poll that gives up after {secs:g} s"))

    root = _Scope(tree)
    visit(tree, root)  # the first pass learns what each function returns
    found.clear()
    visit(tree, root)
    return [f"{line}: {why}" for line, why in sorted(set(found))]


def _ordering_sleeps(body: list[ast.stmt], scope: _Scope) -> Iterator[int]:
    """Sleeps in a test's own body (not in a nested function, not in a polling loop)."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.While)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if isinstance(func, ast.Attribute) and func.attr == "sleep" and isinstance(func.value, ast.Name) \
                    and func.value.id in scope.root.clock_aliases:
                yield stmt.lineno
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from _ordering_sleeps([s for s in inner if isinstance(s, ast.stmt)]
                                            + [s for h in inner if isinstance(h, ast.ExceptHandler) for s in h.body],
                                            scope)


def test_no_wall_clock_assertion_outside_the_deadline_files() -> None:
    found = [v for p in suite_files() if p.name not in DEADLINE_FILES for v in violations(p)]
    assert not found, "wall-clock bounds outside the deadline files:\n" + "\n".join(found)


# ------------------------------------------------------------------ the checker itself


FLAGGED = {
    "elapsed": "import time\ndef test_x():\n    began = time.monotonic()\n    work()\n"
               "    assert time.monotonic() - began < 2\n",
    "took": "import time\ndef test_x():\n    began = time.perf_counter()\n    work()\n"
            "    took = time.perf_counter() - began\n    assert ok and took <= 1.5\n",
    "returned": "import time\ndef test_x():\n    def cost():\n        t = time.perf_counter()\n"
                "        return time.perf_counter() - t\n    small, large = cost(), cost()\n    assert large < 1.5\n",
    "clock_before_deadline": "import time\ndef test_x():\n    deadline = time.time() + 5\n"
                             "    assert time.time() < deadline\n",
    "short_poll": "import time\ndef test_x():\n    end = time.monotonic() + 1.5\n"
                  "    while busy() and time.monotonic() < end:\n        time.sleep(0.01)\n",
    "short_wait_for": "def test_x():\n    assert wait_for(lambda: done(), 2)\n",
    "ordering_sleep": "import time\ndef test_x():\n    start()\n    time.sleep(0.5)\n    check()\n",
    "fail_if": "import time, pytest\ndef test_x():\n    t = time.monotonic()\n    work()\n"
               "    if time.monotonic() - t > 3:\n        pytest.fail('slow')\n",
    "timeout_mark": "import pytest\n@pytest.mark.timeout(5)\ndef test_x():\n    work()\n",
}
ALLOWED = {
    "lower_bound": "import time\ndef test_x():\n    t = time.monotonic()\n    work()\n"
                   "    assert time.monotonic() - t >= 0.9\n",
    "wait_past": "import time\ndef test_x():\n    past = time.time() + 0.4\n    while time.time() < past:\n"
                 "        time.sleep(0.02)\n",
    "guard": "import time\ndef test_x():\n    end = time.monotonic() + 30\n"
             "    while busy() and time.monotonic() < end:\n        time.sleep(0.01)\n    assert not busy()\n",
    "cpu_time": "import time\ndef test_x():\n    t = time.thread_time()\n    work()\n"
                "    assert time.thread_time() - t < 0.5\n",
    "poll_sleep": "import time\ndef test_x():\n    while not done():\n        time.sleep(0.01)\n",
    "server_sleep": "import time\ndef test_x():\n    def handler(conn):\n        time.sleep(2)\n    serve(handler)\n",
    "hang_guard_mark": "import pytest\n@pytest.mark.timeout(600)\ndef test_x():\n    work()\n",
    "a_deadline_given": "import time\ndef test_x(client):\n    client.chat(deadline=time.time() + 0.5)\n",
}


def test_the_checker_flags_each_kind_of_wall_clock_bound() -> None:
    for name, source in FLAGGED.items():
        assert violations_in(source), f"{name} was not flagged"


def test_the_checker_allows_work_measures_lower_bounds_and_guards() -> None:
    for name, source in ALLOWED.items():
        assert not violations_in(source), (name, violations_in(source))
