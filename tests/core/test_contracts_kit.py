"""The plugin test kit (hermes_sdk.testing.contracts) passes a correct store and fails subtly wrong ones.

A store written from scratch (records as JSON text in a dict, one lock) passes every test of
IdempotencyStoreContract; each variant below breaks one promise the way a real backend plausibly
would, and the contract fails it, in the test named beside it. The contract's methods are run
directly here (as pytest would: a fresh store per test, each parametrized case); the real pytest
wiring is run by the core's stores (tests/plugins/test_idempotency.py) and the docs example.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import attrs
import pytest

from hermes_sdk import CallbackProvider, Redactor, StaticPolicyProvider
from hermes_sdk.plugin import COMPLETED, CorruptRecordError, IdempotencyRecord, load_record
from hermes_sdk.testing.contracts import (
    ApprovalProviderContract,
    IdempotencyStoreContract,
    RedactionFilterContract,
)

ROOT = Path(__file__).resolve().parents[2]
Slot = tuple[str, str]


class DictStore:
    """Correct: records as JSON text in a dict; every step under one lock."""

    def __init__(self) -> None:
        self.rows: dict[Any, str] = {}
        self.actions: dict[str, Any] = {}
        self.lock = threading.Lock()

    def slot(self, capability_id: str, key: str) -> Any:
        return (capability_id, key)

    def load(self, slot: Any) -> Optional[IdempotencyRecord]:
        raw = self.rows.get(slot)
        if raw is None:
            return None
        record = load_record(raw, "dict")
        if self.slot(record.capability_id, record.key) != slot:
            raise CorruptRecordError("a record filed under another key", details={"reason": "corrupt_record"})
        return None if record.expired() else record

    def save(self, record: IdempotencyRecord) -> None:
        slot = self.slot(record.capability_id, record.key)
        self.rows[slot] = json.dumps(attrs.asdict(record))
        self.actions[record.action_id] = slot

    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        with self.lock:
            held = self.load(self.slot(record.capability_id, record.key))
            if held is None:
                self.save(record)
            return held

    def complete(self, capability_id: str, key: str, result: Any) -> None:
        with self.lock:
            held = self.load(self.slot(capability_id, key))
            if held is not None:
                self.save(attrs.evolve(held, state=COMPLETED, result=dict(result), completed_at=time.time()))

    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        with self.lock:
            return self.load(self.slot(capability_id, key))

    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        with self.lock:
            slot = self.actions.get(action_id)
            record = None if slot is None else self.load(slot)
            return record if record is not None and record.action_id == action_id else None

    def forget(self, capability_id: str, key: str) -> bool:
        with self.lock:
            return self.rows.pop(self.slot(capability_id, key), None) is not None

    def close(self) -> None:
        pass


# ------------------------------------------------------------------ subtly wrong stores


class NonAtomicReserve(DictStore):
    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        held = self.load(self.slot(record.capability_id, record.key))  # check, then insert: two steps
        if held is None:
            self.save(record)
        return held


class GetIgnoresExpiry(DictStore):
    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        raw = self.rows.get(self.slot(capability_id, key))
        return None if raw is None else load_record(raw, "dict")


class GetByActionIgnoresExpiry(DictStore):
    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        slot = self.actions.get(action_id)
        raw = None if slot is None else self.rows.get(slot)
        return None if raw is None else load_record(raw, "dict")


class GetByActionIgnoresCapability(DictStore):
    """Indexes an action by its key alone, then takes the first record with that key."""

    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        with self.lock:
            slot = self.actions.get(action_id)
            if slot is None:
                return None
            first = next((s for s in self.rows if s[1] == slot[1]), None)
            return None if first is None else self.load(first)


class StaleActionIndex(DictStore):
    """Follows the action index without checking the record is still that action's."""

    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        with self.lock:
            slot = self.actions.get(action_id)
            return None if slot is None else self.load(slot)


class ReserveIgnoresExpiry(DictStore):
    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        with self.lock:
            raw = self.rows.get(self.slot(record.capability_id, record.key))
            if raw is not None:
                return load_record(raw, "dict")  # an expired record keeps its key for ever
            self.save(record)
            return None


class ReserveOverwritesCompleted(DictStore):
    """Treats only a pending record as holding its key: a completed call runs again."""

    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        with self.lock:
            held = self.load(self.slot(record.capability_id, record.key))
            if held is None or held.state == COMPLETED:
                self.save(record)
                return None
            return held


class CompleteCreatesRecords(DictStore):
    def complete(self, capability_id: str, key: str, result: Any) -> None:
        with self.lock:
            held = self.load(self.slot(capability_id, key)) or IdempotencyRecord(
                capability_id=capability_id, key=key, action_id="", input_hash="", state=COMPLETED,
                created_at=time.time(), expires_at=None)
            self.save(attrs.evolve(held, state=COMPLETED, result=dict(result), completed_at=time.time()))


class CompleteDropsExpiry(DictStore):
    def complete(self, capability_id: str, key: str, result: Any) -> None:
        with self.lock:
            held = self.load(self.slot(capability_id, key))
            if held is not None:
                self.save(attrs.evolve(held, state=COMPLETED, result=dict(result), completed_at=time.time(),
                                       expires_at=None))


class CompleteKeepsCallersDict(DictStore):
    """Keeps the caller's result object, not what it held when completed."""

    def __init__(self) -> None:
        super().__init__()
        self.results: dict[Any, Any] = {}

    def complete(self, capability_id: str, key: str, result: Any) -> None:
        super().complete(capability_id, key, result)
        self.results[self.slot(capability_id, key)] = result

    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        record = super().get(capability_id, key)
        kept = self.results.get(self.slot(capability_id, key))
        return record if record is None or kept is None else attrs.evolve(record, result=kept)


class ForgetAlwaysTrue(DictStore):
    def forget(self, capability_id: str, key: str) -> bool:
        super().forget(capability_id, key)
        return True


class JoinedKeys(DictStore):
    def slot(self, capability_id: str, key: str) -> Any:
        return f"{capability_id}:{key}"


class CaseFoldedKeys(DictStore):
    """As a case-insensitive database collation would compare keys."""

    def slot(self, capability_id: str, key: str) -> Any:
        return (capability_id, key.casefold())


class CorruptIsAbsent(DictStore):
    def load(self, slot: Any) -> Optional[IdempotencyRecord]:
        try:
            return super().load(slot)
        except CorruptRecordError:
            return None


class CorruptCrashes(DictStore):
    def load(self, slot: Any) -> Optional[IdempotencyRecord]:
        raw = self.rows.get(slot)
        if raw is None:
            return None
        record = IdempotencyRecord(**json.loads(raw))  # raises ValueError/TypeError, not the typed error
        return None if record.expired() else record


class ForgetDecodes(DictStore):
    """Must decode a record to forget it: a corrupt one can never be cleared."""

    def forget(self, capability_id: str, key: str) -> bool:
        with self.lock:
            self.load(self.slot(capability_id, key))
            return self.rows.pop(self.slot(capability_id, key), None) is not None


class FileStore(DictStore):
    """Says it is shared across processes, but a lock of its own guards a read-modify-write of one file."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        with self.lock:
            self._read()
            held = self.load(self.slot(record.capability_id, record.key))
            if held is None:
                self.save(record)
                self._write()
            return held

    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        with self.lock:
            self._read()
            return self.load(self.slot(capability_id, key))

    def _read(self) -> None:
        try:
            with open(self.path) as f:
                rows = json.load(f)
        except (FileNotFoundError, ValueError):
            rows = []
        self.rows = {tuple(slot): raw for slot, raw in rows}

    def _write(self) -> None:
        with open(self.path, "w") as f:
            json.dump([[list(slot), raw] for slot, raw in self.rows.items()], f)


# ------------------------------------------------------------------ running the contract


class DictContract(IdempotencyStoreContract):
    ttl = 0.3  # the dict's clock is this process's: short records keep the run quick
    store_class: Callable[[], Any] = DictStore

    def make_store(self) -> Any:
        return self.store_class()

    def write_raw(self, store: Any, capability_id: str, key: str, raw: str) -> None:
        store.rows[store.slot(capability_id, key)] = raw


class FileContract(DictContract):
    shared_across_processes = True

    def make_store(self) -> Any:
        return FileStore(str(self.tmp_path / "records.json"))

    def store_spec(self, store: Any) -> Callable[[], Any]:
        return functools.partial(FileStore, store.path)


def run_contract(contract: type, tmp_path: Path) -> dict[str, str]:
    """Every test of the contract as pytest runs it (a fresh store, provider or filter per test and
    parameter): test -> outcome."""
    outcomes: dict[str, str] = {}
    make, close = {IdempotencyStoreContract: ("make_store", "close"), ApprovalProviderContract: ("make_provider", ""),
                   RedactionFilterContract: ("make_filter", "")}[next(
                       base for base in contract.__mro__ if base.__module__.startswith("hermes_sdk.testing"))]
    for name in sorted(n for n in dir(contract) if n.startswith("test_")):
        cases: list[dict[str, object]] = [{}]
        for mark in getattr(getattr(contract, name), "pytestmark", []):
            if mark.name == "parametrize":
                cases = [{mark.args[0]: value} for value in mark.args[1]]
        for case in cases:
            test_id = name + (f"[{next(iter(case.values()))}]" if case else "")
            instance = contract()
            instance.tmp_path = tmp_path / test_id
            instance.tmp_path.mkdir()
            made = getattr(instance, make)()
            try:
                getattr(instance, name)(made, **case)
                outcomes[test_id] = "passed"
            except pytest.skip.Exception:
                outcomes[test_id] = "skipped"
            except BaseException as exc:  # an assertion, pytest.fail, or the store's own crash
                outcomes[test_id] = f"failed: {type(exc).__name__}: {str(exc)[:160]}"
            finally:
                if close:
                    getattr(made, close)()
    return outcomes


def failed(outcomes: dict[str, str]) -> set[str]:
    return {test for test, outcome in outcomes.items() if outcome.startswith("failed")}


def test_a_correct_store_written_from_scratch_passes_every_test(tmp_path: Path) -> None:
    outcomes = run_contract(DictContract, tmp_path)
    assert not failed(outcomes), {t: o for t, o in outcomes.items() if o.startswith("failed")}
    skipped = {t for t, o in outcomes.items() if o == "skipped"}
    # all but the tests of a store shared across processes ran (write_raw makes the corrupt-record ones run)
    assert skipped == {"test_another_store_object_sees_the_records", "test_reserve_is_atomic_across_processes",
                       "test_reserve_is_atomic_across_store_objects",
                       "test_reserve_is_atomic_when_store_objects_interleave"}, skipped
    assert len([t for t in outcomes if t.startswith("test_a_corrupt_record")]) == 8


WRONG = {
    NonAtomicReserve: {"test_reserve_is_atomic_when_callers_interleave"},
    GetIgnoresExpiry: {"test_an_expired_record_is_absent"},
    GetByActionIgnoresExpiry: {"test_an_expired_record_is_absent"},
    GetByActionIgnoresCapability: {"test_records_are_scoped_by_capability"},
    StaleActionIndex: {"test_an_expired_record_gives_its_key_back",
                       "test_forget_deletes_the_record_and_gives_the_key_back"},
    ReserveIgnoresExpiry: {"test_an_expired_record_gives_its_key_back"},
    ReserveOverwritesCompleted: {"test_complete_keeps_the_record_and_adds_the_result"},
    CompleteCreatesRecords: {"test_complete_of_an_unknown_key_creates_nothing"},
    CompleteDropsExpiry: {"test_an_expired_record_is_absent", "test_complete_keeps_the_record_and_adds_the_result"},
    CompleteKeepsCallersDict: {"test_complete_keeps_the_record_and_adds_the_result"},
    ForgetAlwaysTrue: {"test_forget_deletes_the_record_and_gives_the_key_back"},
    JoinedKeys: {"test_keys_never_collide"},
    CaseFoldedKeys: {"test_keys_never_collide"},
    CorruptIsAbsent: {f"test_a_corrupt_record_is_a_typed_error[{kind}]" for kind in (
        "empty", "missing_fields", "not_an_object", "not_json", "time_not_a_number", "unknown_state", "wrong_types")},
    CorruptCrashes: {"test_a_corrupt_record_is_a_typed_error[not_json]",
                     "test_a_corrupt_record_is_a_typed_error[misplaced]"},
    ForgetDecodes: {"test_a_corrupt_record_is_a_typed_error[not_json]"},
}


@pytest.mark.parametrize("store_class", list(WRONG), ids=[c.__name__ for c in WRONG])
def test_a_subtly_wrong_store_fails_the_contract(store_class: type[DictStore], tmp_path: Path) -> None:
    contract = type(f"Test{store_class.__name__}", (DictContract,), {"store_class": store_class})
    outcomes = run_contract(contract, tmp_path)
    missed = WRONG[store_class] - failed(outcomes)
    assert not missed, f"{store_class.__name__} passed {missed}: {outcomes}"


def test_a_store_that_is_not_shared_across_processes_fails_the_process_race(tmp_path: Path) -> None:
    outcomes = run_contract(FileContract, tmp_path)
    assert {"test_reserve_is_atomic_across_processes", "test_reserve_is_atomic_across_store_objects",
            "test_reserve_is_atomic_when_store_objects_interleave"} <= failed(outcomes), outcomes


def test_the_kit_imports_only_public_modules_and_pytest() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import metrics
    finally:
        sys.path.remove(str(ROOT / "tools"))
    kit = sorted((ROOT / "hermes_sdk" / "testing" / "contracts").glob("*.py"))
    assert len(kit) == 4
    for path in kit:
        source = path.read_text()
        used = {module for _, module in metrics.imported_modules(source)}
        assert used <= metrics.PUBLIC_MODULES, (path.name, used - metrics.PUBLIC_MODULES)
        tops = {n.names[0].name.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import)}
        tops |= {n.module.split(".")[0] for n in ast.walk(ast.parse(source))
                 if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module}
        from test_plugin_imports import is_stdlib  # sys.stdlib_module_names is 3.10+

        assert {t for t in tops if not is_stdlib(t)} <= {"hermes_sdk", "pytest", "attrs"}, (path.name, tops)


def test_the_sdk_does_not_need_pytest() -> None:
    code = ("import sys, hermes_sdk, hermes_sdk.plugin, hermes_sdk.testing; "
            "hermes_sdk.testing.HermesEmulator; assert 'pytest' not in sys.modules, 'pytest was imported'")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


# ------------------------------------------------------------------ the core's providers and filters


class TestCallbackProvider(ApprovalProviderContract):
    """A callback that answers what its person decided, per input; undecided requests stay undecided."""

    def make_provider(self) -> Any:
        self.decisions: dict[str, str] = {}

        def callback(request: Any) -> Any:
            verdict = self.decisions.get(request.input_hash)
            if verdict == "approved" and request.fully_shown and request.expires_at > time.time():
                return request.approve(approver="alice", policy_decision_id="pd-1")
            if verdict is not None:
                return request.deny(approver="alice", reason="not this one")
            return None

        return CallbackProvider(callback)

    def decide(self, provider: Any, request: Any, decision: str) -> None:
        self.decisions[request.input_hash] = decision


class TestStaticPolicyProvider(ApprovalProviderContract):
    decides_per_request = False  # a policy decides by capability, principal and tenant

    def make_provider(self) -> Any:
        return StaticPolicyProvider([])

    def decide(self, provider: Any, request: Any, decision: str) -> None:
        from hermes_sdk import PolicyRule

        if decision == "approved" and request.fully_shown:
            provider.rules = (PolicyRule("pd-contract", capabilities=request.capability_id),)
        else:
            provider.rules = ()


class TestRedactorAsFilter(RedactionFilterContract):
    """A client's Redactor with a pattern, used as a filter: what a plugin filter must do, it does."""

    def make_filter(self) -> Any:
        redactor = Redactor(patterns=[r"acct-[0-9]{6}"])
        return lambda key, text: redactor.text(text, key)

    def hidden_examples(self) -> Any:
        return [(None, "charge acct-123456 now", "acct-123456"),
                ("command", "echo api_key=s3cr3t-value", "s3cr3t-value"),
                ("message", "Authorization: Bearer abc.def.ghi", "abc.def.ghi")]

    def shown_examples(self) -> Any:
        return [("status", "completed"), (None, "plain words")]


class TestDemoPluginFilter(RedactionFilterContract):
    """The third-party demo plugin's filter (tests/thirdparty_plugin)."""

    def make_filter(self) -> Any:
        plugin = pytest.importorskip("hermes_demo_plugin.plugin")
        filters = plugin.DemoPlugin().hermes_redaction_filters(client=None)
        assert filters
        return filters[0]

    def hidden_examples(self) -> Any:
        return [(None, "the token is demo-secret-42", "demo-secret-42"),
                ("command", "run demo-secret-7 x", "demo-secret-7")]


# ------------------------------------------------------------------ wrong providers and filters


class CallbackContract(TestCallbackProvider):
    undecided_within = 2.0
    answer: Callable[..., Any] = staticmethod(lambda contract, request: None)

    def make_provider(self) -> Any:
        self.decisions = {}
        return lambda request: self.answer(self, request)


def _approve(request: Any, **kw: Any) -> Any:
    return request.approve(approver="bob", policy_decision_id="pd-9", **kw)


def _hang(contract: Any, request: Any) -> Any:
    threading.Event().wait(5)
    return None


WRONG_PROVIDERS: dict[str, tuple[Callable[..., Any], set[str]]] = {
    "approves_everything": (lambda c, r: _approve(r), {
        "test_an_undecided_request_is_not_approved_and_answered_in_time",
        "test_approving_one_input_does_not_approve_another", "test_a_request_not_fully_shown_is_approved_only_blind",
        "test_a_denial_never_approves"}),
    "answers_with_the_last_decision": (
        lambda c, r: c.__dict__.setdefault("last", _approve(r)) if c.decisions.get(r.input_hash) else None,
        {"test_concurrent_requests_each_get_their_own_decision"}),
    "ignores_fully_shown": (
        lambda c, r: _approve(r) if c.decisions.get(r.input_hash) == "approved" else None,
        {"test_a_request_not_fully_shown_is_approved_only_blind"}),
    "never_answers": (_hang, {"test_an_undecided_request_is_not_approved_and_answered_in_time"}),
    "raises_its_own_error": (lambda c, r: 1 / 0, {"test_an_undecided_request_is_not_approved_and_answered_in_time"}),
}


@pytest.mark.parametrize("wrong", list(WRONG_PROVIDERS))
def test_a_wrong_approval_provider_fails_the_contract(wrong: str, tmp_path: Path) -> None:
    answer, expected = WRONG_PROVIDERS[wrong]
    contract = type(f"Test_{wrong}", (CallbackContract,), {"answer": staticmethod(answer)})
    outcomes = run_contract(contract, tmp_path)
    assert expected <= failed(outcomes), outcomes


QUADRATIC = re.compile(r"a*b")


class _Flip:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, key: Any, text: str) -> str:
        self.n += 1
        return text + ("" if self.n % 2 else " ")


WRONG_FILTERS: dict[str, tuple[Callable[[], Any], set[str]]] = {
    "unhides": (lambda: lambda key, text: text.replace("[REDACTED]", "secret"),
                {"test_it_never_shows_what_is_already_hidden"}),
    "returns_bytes": (lambda: lambda key, text: text.encode("utf-8", "surrogatepass"),
                      {"test_it_returns_a_string_for_every_key_and_text"}),
    "fails_on_a_surrogate": (lambda: lambda key, text: text.encode("utf-8").decode("utf-8"),
                             {"test_it_returns_a_string_for_every_key_and_text"}),
    "not_deterministic": (_Flip, {"test_it_is_deterministic_and_idempotent"}),
    "not_idempotent": (lambda: lambda key, text: text.replace("a", "aa"), {"test_it_is_deterministic_and_idempotent"}),
    # quadratic in the length of a run of "a": the contract sees it grow 16x from 5,000 to 20,000 characters
    "quadratic_regex": (lambda: lambda key, text: QUADRATIC.sub("[REDACTED]", text),
                        {"test_a_huge_text_is_filtered_in_linear_time"}),
    "misses_its_secret_in_long_text": (lambda: lambda key, text: text if len(text) > 1000 else text.replace(
        "acct-123456", "[REDACTED]"), {"test_it_hides_what_it_is_for"}),
}


@pytest.mark.parametrize("wrong", list(WRONG_FILTERS))
def test_a_wrong_redaction_filter_fails_the_contract(wrong: str, tmp_path: Path) -> None:
    make, expected = WRONG_FILTERS[wrong]
    contract = type(f"Test_{wrong}", (TestRedactorAsFilter,), {
        "make_filter": lambda self: make(), "huge_seconds": 1.0, "shown_examples": lambda self: (),
        "hidden_examples": lambda self: [(None, "charge acct-123456 now", "acct-123456")]})
    outcomes = run_contract(contract, tmp_path)
    assert expected <= failed(outcomes), outcomes
