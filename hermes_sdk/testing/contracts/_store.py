"""What every :class:`~hermes_sdk.plugin.IdempotencyStore` must do, as pytest tests to inherit."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import sys
import threading
import time
import uuid
from pathlib import Path
from types import FrameType
from typing import Callable, Iterator, Mapping, Optional

import attrs
import pytest

from hermes_sdk.plugin import COMPLETED, PENDING, CorruptRecordError, IdempotencyRecord, IdempotencyStore

CHAT = "cap:hermes_agent:default:chat"
RESPONSES = "cap:hermes_agent:default:responses"
StoreFactory = Callable[[], IdempotencyStore]
#: How long a thread or a process waits for the others at a start line before the test fails.
START_TIMEOUT = 120.0


def make_record(key: str, action_id: str, capability_id: str = CHAT, ttl: Optional[float] = 60.0) -> IdempotencyRecord:
    """A pending record as the SDK reserves one: ``ttl`` seconds to live (None: never expires)."""
    now = time.time()
    return IdempotencyRecord(capability_id=capability_id, key=key, action_id=action_id,
                             input_hash=f"hash-of-{action_id}", state=PENDING, created_at=now,
                             expires_at=None if ttl is None else now + ttl)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def assert_same(got: Optional[IdempotencyRecord], want: IdempotencyRecord, **changed: object) -> None:
    """``got`` is ``want`` as stored (times to the millisecond), with ``changed`` fields."""
    assert isinstance(got, IdempotencyRecord), f"expected the record of action {want.action_id}, got {got!r}"
    for field in ("capability_id", "key", "action_id", "input_hash", "state", "result"):
        expected = changed.get(field, getattr(want, field))
        assert getattr(got, field) == expected, f"{field}: {getattr(got, field)!r} != {expected!r}"
    for field in ("created_at", "expires_at"):
        a, b = getattr(got, field), getattr(want, field)
        assert (a is None and b is None) or (a is not None and b is not None and abs(a - b) < 1e-3), \
            f"{field}: {a!r} != {b!r}"


def wait_past(moment: Optional[float]) -> None:
    """Sleep until the clock has passed ``moment`` (epoch seconds): expiry is judged by the clock."""
    assert moment is not None
    while time.time() <= moment + 0.05:
        time.sleep(max(0.01, moment + 0.05 - time.time()))


def _yield_in(store: object) -> Callable[[FrameType, str, object], None]:
    """A profiler that lets other threads run after each call made in the store's own module: a
    reserve that checks, then inserts, shows the gap between the two steps at once."""
    files = _store_files(store)

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event in ("c_return", "return") and frame.f_code.co_filename in files:
            time.sleep(0)  # gives up the GIL

    return hook


def _store_files(store: object) -> frozenset[str]:
    """The source files of the store's class and its bases (its own code: where its steps are)."""
    files = set()
    for cls in type(store).__mro__[:-1]:
        for value in vars(cls).values():
            code = getattr(getattr(value, "__func__", value), "__code__", None)
            if code is not None:
                files.add(code.co_filename)
    return frozenset(files)


class _Paused:
    """A profiler that stops its thread at the ``stop_at``-th step of a store's own code (each call
    that returns there) until released, and counts the steps: the forced interleaving's switch."""

    def __init__(self, store: object, stop_at: Optional[int] = None) -> None:
        self.files = _store_files(store)
        self.stop_at = stop_at
        self.steps = 0
        self.paused = threading.Event()
        self.release = threading.Event()

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event not in ("c_return", "return") or frame.f_code.co_filename not in self.files:
            return
        self.steps += 1
        if self.steps == self.stop_at:
            self.paused.set()
            self.release.wait(START_TIMEOUT)


def _thread_state(native_id: Optional[int]) -> Optional[str]:
    """The kernel's state of a thread of this process ('R' runnable, 'S'/'D' waiting), where
    /proc has it. Read with ``os.pread``, which lets go of the GIL during the read: a thread that
    only waits for the GIL is woken by that and shows 'R', so 'S' means it waits for something else
    (a lock, a database, a reply)."""
    if native_id is None:
        return None
    try:
        fd = os.open(f"/proc/self/task/{native_id}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        text = os.pread(fd, 4096, 0).decode("ascii", "replace")
    except OSError:  # the thread ended meanwhile: its caller sees it done
        return None
    finally:
        os.close(fd)
    return text.rsplit(")", 1)[-1].split()[0] if ")" in text else None


def _garbage(record: IdempotencyRecord) -> dict[str, str]:
    """What a disk fault, a bad migration or another program may leave where a record was."""
    fields = attrs.asdict(record)
    elsewhere = attrs.evolve(record, key=record.key + "-elsewhere", action_id="act-elsewhere")
    return {
        "not_json": "{not json",
        "empty": "",
        "not_an_object": "[1, 2, 3]",
        "missing_fields": json.dumps({"capability_id": record.capability_id, "key": record.key}),
        "wrong_types": json.dumps({**fields, "key": 5}),
        "unknown_state": json.dumps({**fields, "state": "running"}),
        "time_not_a_number": json.dumps({**fields, "created_at": "yesterday"}),
        # a well-formed record of another key, filed under this one
        "misplaced": json.dumps(attrs.asdict(elsewhere)),
    }


GARBAGE = sorted(_garbage(make_record("k", "act")))


def _reserve_in_child(spec: StoreFactory, keys: list[str], name: str, barrier: "threading.Barrier",
                      answers: "multiprocessing.Queue[tuple[str, str, Optional[str], str]]") -> None:
    """Run in another process: open the store from its spec, then race the others for each key."""
    try:
        store = spec()
    except BaseException as exc:
        answers.put((name, "", None, f"could not open the store from store_spec(): {exc!r}"))
        barrier.abort()
        return
    try:
        for key in keys:
            barrier.wait(START_TIMEOUT)
            held = store.reserve(make_record(key, f"act-{name}-{key}"))
            answers.put((name, key, None if held is None else held.action_id, ""))
    except BaseException as exc:
        answers.put((name, "", None, f"{type(exc).__name__}: {exc}"))
        barrier.abort()
    finally:
        store.close()


def _reserve_as(name: str, store: IdempotencyStore, profiler: _Paused, key: str,
                answers: dict[str, Optional[IdempotencyRecord]], errors: list[BaseException]) -> None:
    """One caller of the forced interleaving: reserve ``key`` under ``profiler``."""
    sys.setprofile(profiler)
    try:
        answers[name] = store.reserve(make_record(key, f"act-{name}-{key}"))
    except BaseException as exc:  # reported on the test's thread
        errors.append(exc)
    finally:
        sys.setprofile(None)
        profiler.paused.set()  # done: nothing to wait for


def _wait_until_done_or_waiting(thread: threading.Thread, progress: _Paused, limit: int) -> None:
    """Return once ``thread`` ended or waits for another caller (see ``_interleave``)."""
    native_id = getattr(thread, "native_id", None)
    still, last = 0, -1
    quiet_since = time.monotonic()
    while not progress.paused.wait(0.001):
        if progress.steps > limit:
            return  # polling for a lock the stopped caller holds
        state = _thread_state(native_id)
        if progress.steps != last:
            still, last, quiet_since = 0, progress.steps, time.monotonic()
            continue
        if state is None:  # no /proc: half a second without a step
            if time.monotonic() - quiet_since > 0.5:
                return
        elif state not in ("R",):
            still += 1
            if still >= 3:  # asleep in the kernel three looks in a row, no step between
                return
        else:
            still = 0


class IdempotencyStoreContract:
    """The tests every idempotency store passes: subclass it in a test module and give :meth:`make_store`.

    Covered: ``reserve`` (atomic: one owner per key, across threads, store objects and processes),
    ``complete``, ``get``, ``get_by_action``, ``forget``, pending records that never let a call run
    twice, expiry (``expires_at``), keys scoped by capability, corrupt records (a typed
    :class:`~hermes_sdk.plugin.CorruptRecordError`, never a crash or an absent record) and ``close``.

    Hooks a subclass may give:

    * :meth:`make_store` (required): a fresh, empty store. ``self.tmp_path`` is a fresh directory
      of the test, for stores kept in files.
    * :attr:`shared_across_processes` and :meth:`store_spec`: a store whose records other processes
      share (a database, Redis) says so, and gives a picklable factory that opens it elsewhere; the
      race across processes and store objects runs only then.
    * :meth:`write_raw`: overwrite a stored record with raw text; the corrupt-record tests run only
      for a store that gives it (a store that keeps no encoded form has nothing to corrupt).
    * :attr:`ttl`: the lifetime of the records the expiry tests wait out (seconds).
    """

    #: Whether store objects made by :meth:`store_spec` (in this process or another) share records.
    shared_across_processes = False
    #: Lifetime, in seconds, of the short-lived records of the expiry tests (they wait it out).
    ttl = 1.0
    #: Threads, keys and processes of the races.
    race_threads = 8
    race_keys = 25
    race_processes = 3

    #: A fresh directory of the running test (set before :meth:`make_store` is called).
    tmp_path: Path

    def make_store(self) -> IdempotencyStore:
        """A fresh store with no records (override)."""
        raise NotImplementedError(f"{type(self).__name__} must define make_store(self) returning a fresh store")

    def store_spec(self, store: IdempotencyStore) -> StoreFactory:
        """A picklable zero-argument callable (a module-level function, ``functools.partial``) that
        opens another store object sharing ``store``'s records, in this process or another."""
        raise NotImplementedError(f"{type(self).__name__} says shared_across_processes = True: define "
                                  "store_spec(self, store) returning a picklable factory of the same store")

    def write_raw(self, store: IdempotencyStore, capability_id: str, key: str, raw: str) -> None:
        """Replace the stored form of the record of ``(capability_id, key)`` with ``raw`` (text that
        may not be a record at all), leaving any index of it as it is; override to run the
        corrupt-record tests."""
        pytest.skip(f"{type(self).__name__} does not define write_raw(): no corrupt-record tests")

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[IdempotencyStore]:
        self.tmp_path = tmp_path
        made = self.make_store()
        try:
            yield made
        finally:
            made.close()

    def _spec(self, store: IdempotencyStore) -> StoreFactory:
        if not self.shared_across_processes:
            pytest.skip(f"{type(self).__name__}.shared_across_processes is False")
        return self.store_spec(store)

    # ------------------------------------------------------------------ reserve, get, get_by_action

    def test_it_is_an_idempotency_store(self, store: IdempotencyStore) -> None:
        assert isinstance(store, IdempotencyStore), "a store has reserve, complete, get, get_by_action, forget, close"

    def test_the_first_reservation_owns_the_key(self, store: IdempotencyStore) -> None:
        record = make_record(unique("k"), "act-first")
        assert store.reserve(record) is None, "reserve() returns None when this caller now owns the key"
        assert_same(store.get(record.capability_id, record.key), record)
        assert_same(store.get_by_action(record.action_id), record)
        assert store.get(record.capability_id, unique("never-reserved")) is None
        assert store.get_by_action(unique("act-never")) is None

    def test_a_held_key_answers_the_record_that_holds_it(self, store: IdempotencyStore) -> None:
        first = make_record(unique("k"), "act-holder")
        assert store.reserve(first) is None
        second = make_record(first.key, "act-late")
        assert_same(store.reserve(second), first)
        assert_same(store.get(first.capability_id, first.key), first)  # not overwritten
        assert store.get_by_action(second.action_id) is None, "the loser of a reservation has no record"

    def test_a_pending_record_never_lets_a_call_run_twice(self, store: IdempotencyStore) -> None:
        first = make_record(unique("k"), "act-pending")
        assert store.reserve(first) is None
        for attempt in range(20):
            held = store.reserve(make_record(first.key, f"act-retry-{attempt}"))
            assert held is not None, f"attempt {attempt} was handed a key whose record is still pending"
            assert_same(held, first)
        assert_same(store.get(first.capability_id, first.key), first)

    # ------------------------------------------------------------------ complete

    def test_complete_keeps_the_record_and_adds_the_result(self, store: IdempotencyStore) -> None:
        record = make_record(unique("k"), "act-complete")
        assert store.reserve(record) is None
        result: dict[str, object] = {"status": "completed", "error": None, "output": {
            "text": "h\u00e9llo \u2713 \U0001F511", "n": 3, "ratio": 0.25, "ok": True, "none": None,
            "list": [1, "a", {}]}}
        before = time.time()
        store.complete(record.capability_id, record.key, result)
        expected = json.loads(json.dumps(result))
        result["status"] = "changed by the caller later"  # the store keeps what it was given
        done = store.get(record.capability_id, record.key)
        assert_same(done, record, state=COMPLETED, result=expected)
        assert done is not None and done.completed_at is not None and done.completed_at >= before - 1
        assert_same(store.get_by_action(record.action_id), record, state=COMPLETED, result=expected)
        replay = store.reserve(make_record(record.key, "act-replay"))
        assert_same(replay, record, state=COMPLETED, result=expected)  # the source of every replay

    def test_complete_of_an_unknown_key_creates_nothing(self, store: IdempotencyStore) -> None:
        key = unique("k")
        store.complete(CHAT, key, {"status": "completed"})
        assert store.get(CHAT, key) is None
        assert store.reserve(make_record(key, "act-after")) is None

    # ------------------------------------------------------------------ forget

    def test_forget_deletes_the_record_and_gives_the_key_back(self, store: IdempotencyStore) -> None:
        record = make_record(unique("k"), "act-forgotten")
        assert store.reserve(record) is None
        assert store.forget(record.capability_id, record.key) is True
        assert store.forget(record.capability_id, record.key) is False
        assert store.forget(record.capability_id, unique("never-reserved")) is False
        assert store.get(record.capability_id, record.key) is None
        assert store.get_by_action(record.action_id) is None
        again = make_record(record.key, "act-again")
        assert store.reserve(again) is None
        assert_same(store.get_by_action(again.action_id), again)
        assert store.get_by_action(record.action_id) is None

    # ------------------------------------------------------------------ scope and keys

    def test_records_are_scoped_by_capability(self, store: IdempotencyStore) -> None:
        key = unique("k")
        chat, responses = make_record(key, "act-chat", CHAT), make_record(key, "act-responses", RESPONSES)
        assert store.reserve(chat) is None
        assert store.reserve(responses) is None, "the same key under another capability is another record"
        assert_same(store.get(CHAT, key), chat)
        assert_same(store.get(RESPONSES, key), responses)
        assert_same(store.get_by_action(chat.action_id), chat)
        assert_same(store.get_by_action(responses.action_id), responses)
        store.complete(CHAT, key, {"status": "completed"})
        assert_same(store.get(RESPONSES, key), responses)  # still pending
        assert_same(store.get_by_action(responses.action_id), responses)
        assert store.forget(CHAT, key) is True
        assert store.get_by_action(chat.action_id) is None
        assert_same(store.get(RESPONSES, key), responses)
        assert_same(store.get_by_action(responses.action_id), responses)

    def test_keys_never_collide(self, store: IdempotencyStore) -> None:
        tag = uuid.uuid4().hex[:8]
        slots = [
            ("cap:x:" + tag, "a:b"), ("cap:x:" + tag + ":a", "b"),  # joined with ':' they would be one
            ("cap:x:" + tag, "a/b"), ("cap:x:" + tag + "/a", "b"),
            (CHAT, tag + "-k"), (CHAT, tag + "-K"), (CHAT, tag + "-k "), (CHAT, " " + tag + "-k"),
            (CHAT, tag + "-\u043a\u043b\u044e\u0447-\U0001F511"), (CHAT, tag + "-" + "x" * 2000),
            (CHAT, tag + "-'; DROP TABLE records; --\"%_*?"), (CHAT, tag + "-line\nbreak"),
        ]
        records = [make_record(key, f"act-{i}", capability_id=cap) for i, (cap, key) in enumerate(slots)]
        for record in records:
            assert store.reserve(record) is None, f"{record.key[:40]!r} under {record.capability_id!r} was taken"
        for record in records:
            assert_same(store.get(record.capability_id, record.key), record)
            assert_same(store.get_by_action(record.action_id), record)

    # ------------------------------------------------------------------ expiry

    def test_an_expired_record_is_absent(self, store: IdempotencyStore) -> None:
        short = make_record(unique("k"), "act-short", ttl=self.ttl)
        done = make_record(unique("k"), "act-done", ttl=self.ttl)
        never = make_record(unique("k"), "act-never", ttl=None)
        lasting = make_record(unique("k"), "act-lasting", ttl=3600)
        for record in (short, done, never, lasting):
            assert store.reserve(record) is None
        store.complete(done.capability_id, done.key, {"status": "completed"})
        got = store.get(short.capability_id, short.key)
        if time.time() < (short.expires_at or 0):
            assert_same(got, short)  # live until expires_at
        wait_past(max(short.expires_at or 0, done.expires_at or 0))
        for gone in (short, done):
            assert store.get(gone.capability_id, gone.key) is None, "get() returned an expired record"
            assert store.get_by_action(gone.action_id) is None, "get_by_action() returned an expired record"
        assert_same(store.get(never.capability_id, never.key), never)
        assert_same(store.get_by_action(lasting.action_id), lasting)

    def test_an_expired_record_gives_its_key_back(self, store: IdempotencyStore) -> None:
        old = make_record(unique("k"), "act-old", ttl=self.ttl)
        assert store.reserve(old) is None
        wait_past(old.expires_at)
        new = make_record(old.key, "act-new")
        assert store.reserve(new) is None, "an expired record still held its key"
        assert_same(store.get(new.capability_id, new.key), new)
        assert_same(store.get_by_action(new.action_id), new)
        assert store.get_by_action(old.action_id) is None
        store.complete(new.capability_id, new.key, {"status": "completed"})
        assert_same(store.get_by_action(new.action_id), new, state=COMPLETED, result={"status": "completed"})

    # ------------------------------------------------------------------ races

    def _race(self, stores: list[IdempotencyStore], keys: list[str]) -> None:
        """One thread per store object; all reserve each key at once; exactly one owns it."""
        answers: dict[str, list[tuple[str, Optional[IdempotencyRecord]]]] = {key: [] for key in keys}
        errors: list[BaseException] = []
        barrier = threading.Barrier(len(stores))
        lock = threading.Lock()

        def run(i: int, store: IdempotencyStore) -> None:
            sys.setprofile(_yield_in(store))
            try:
                for key in keys:
                    barrier.wait(START_TIMEOUT)
                    action = f"act-t{i}-{key}"
                    held = store.reserve(make_record(key, action))
                    with lock:
                        answers[key].append((action, held))
            except BaseException as exc:
                errors.append(exc)
                barrier.abort()
            finally:
                sys.setprofile(None)

        threads = [threading.Thread(target=run, args=(i, s), daemon=True) for i, s in enumerate(stores)]
        switch = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # switch threads as often as possible: a check-then-set shows its gap
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(START_TIMEOUT)
        finally:
            sys.setswitchinterval(switch)
        assert not errors, errors
        for key, got in answers.items():
            owners = [action for action, held in got if held is None]
            assert len(owners) == 1, f"key {key}: {len(owners)} callers were told they own it: {owners}"
            losers = {held.action_id for _, held in got if held is not None}
            assert losers <= set(owners), f"key {key}: losers were shown {losers}, the owner is {owners[0]}"
            holder = stores[0].get(CHAT, key)
            assert holder is not None and holder.action_id == owners[0]

    def _interleave(self, first: IdempotencyStore, second: IdempotencyStore) -> None:
        """One caller stopped after each step of its reserve in turn while a second reserves the same
        key: exactly one owns it. A check-then-insert is caught at the step between the two, every
        run, however busy the machine: the order is forced, not hoped for.

        While the first caller is stopped, the second either finishes (the store let it in) or
        waits for the first (a lock, a transaction): then the first is let go and both finish. The
        second waits when its thread sleeps in the kernel with no step taken (the thread's state in
        /proc; where there is none, no step for half a second), or when it has taken ten times the
        steps a reserve takes alone (a store that polls for a lock)."""
        alone = _Paused(first)
        sys.setprofile(alone)
        try:
            assert first.reserve(make_record(unique("alone"), "act-alone")) is None
        finally:
            sys.setprofile(None)
        stop_at = 1
        while True:
            key = unique("interleaved")
            pause = _Paused(first, stop_at)
            progress = _Paused(second)
            answers: dict[str, Optional[IdempotencyRecord]] = {}
            errors: list[BaseException] = []
            a = threading.Thread(target=_reserve_as, args=("first", first, pause, key, answers, errors), daemon=True)
            a.start()
            assert pause.paused.wait(START_TIMEOUT), "the first reserve() neither paused nor finished"
            if not a.is_alive() or "first" in answers or errors:  # it finished before this step: every step was tried
                a.join(START_TIMEOUT)
                assert not errors, errors
                self._one_owner(first, key, answers)
                break
            b = threading.Thread(target=_reserve_as, args=("second", second, progress, key, answers, errors),
                                 daemon=True)
            b.start()
            _wait_until_done_or_waiting(b, progress, limit=10 * alone.steps + 100)
            pause.release.set()
            a.join(START_TIMEOUT)
            b.join(START_TIMEOUT)
            assert not a.is_alive() and not b.is_alive(), "a reserve() never returned"
            assert not errors, errors
            self._one_owner(first, key, answers, stopped_after=stop_at)
            stop_at += 1

    @staticmethod
    def _one_owner(store: IdempotencyStore, key: str, answers: Mapping[str, Optional[IdempotencyRecord]],
                   stopped_after: Optional[int] = None) -> None:
        where = "" if stopped_after is None else \
            f" (the first caller stopped after step {stopped_after} of its reserve)"
        owners = [name for name, held in answers.items() if held is None]
        assert len(owners) == 1, f"key {key}: {len(owners)} callers were told they own it{where}: {owners}"
        owner = f"act-{owners[0]}-{key}"
        shown = {held.action_id for held in answers.values() if held is not None}
        assert shown <= {owner}, f"key {key}: the loser was shown {shown}, the owner is {owner}{where}"
        holder = store.get(CHAT, key)
        assert holder is not None and holder.action_id == owner, f"key {key}: stored {holder!r}, owner {owner}{where}"

    def test_reserve_is_atomic_when_callers_interleave(self, store: IdempotencyStore) -> None:
        self._interleave(store, store)

    def test_reserve_is_atomic_when_store_objects_interleave(self, store: IdempotencyStore) -> None:
        other = self._spec(store)()
        try:
            self._interleave(store, other)
        finally:
            other.close()

    def test_reserve_is_atomic_across_threads(self, store: IdempotencyStore) -> None:
        self._race([store] * self.race_threads, [unique("race") for _ in range(self.race_keys)])

    def test_reserve_is_atomic_across_store_objects(self, store: IdempotencyStore) -> None:
        spec = self._spec(store)
        others = [spec() for _ in range(self.race_threads - 1)]
        try:
            self._race([store, *others], [unique("race") for _ in range(max(1, self.race_keys // 5))])
        finally:
            for other in others:
                other.close()

    def test_another_store_object_sees_the_records(self, store: IdempotencyStore) -> None:
        other = self._spec(store)()
        try:
            mine, theirs = make_record(unique("k"), "act-mine"), make_record(unique("k"), "act-theirs")
            assert store.reserve(mine) is None
            assert other.reserve(theirs) is None
            assert_same(other.reserve(make_record(mine.key, "act-other")), mine)
            store.complete(mine.capability_id, mine.key, {"status": "completed"})
            assert_same(other.get_by_action(mine.action_id), mine, state=COMPLETED, result={"status": "completed"})
            assert_same(store.get(theirs.capability_id, theirs.key), theirs)
            assert other.forget(mine.capability_id, mine.key) is True
            assert store.get(mine.capability_id, mine.key) is None
        finally:
            other.close()

    def test_reserve_is_atomic_across_processes(self, store: IdempotencyStore) -> None:
        spec = self._spec(store)
        try:
            pickle.dumps(spec)
        except Exception as exc:
            pytest.fail(f"store_spec() must return a picklable factory (a module-level function or "
                        f"functools.partial): {exc!r}")
        ctx = multiprocessing.get_context("spawn")  # a new interpreter: nothing inherited but the spec
        keys = [unique("race") for _ in range(max(1, self.race_keys // 3))]
        barrier = ctx.Barrier(self.race_processes)
        answers: "multiprocessing.Queue[tuple[str, str, Optional[str], str]]" = ctx.Queue()
        children = [ctx.Process(target=_reserve_in_child, args=(spec, keys, f"p{i}", barrier, answers), daemon=True)
                    for i in range(self.race_processes)]
        for child in children:
            child.start()
        got: dict[str, list[Optional[str]]] = {key: [] for key in keys}
        try:
            for _ in range(self.race_processes * len(keys)):
                name, key, holder, error = answers.get(timeout=START_TIMEOUT)
                assert not error, f"process {name}: {error}"
                got[key].append(holder)
        finally:
            for child in children:
                child.join(30)
                if child.is_alive():
                    child.terminate()  # this test's own child only
        for key, holders in got.items():
            owners = [h for h in holders if h is None]
            assert len(owners) == 1, f"key {key}: {len(owners)} processes were told they own it"
            owner = store.get(CHAT, key)
            assert owner is not None and all(h == owner.action_id for h in holders if h is not None), \
                f"key {key}: owner {owner!r}, losers were shown {holders}"

    # ------------------------------------------------------------------ corrupt records

    @pytest.mark.parametrize("garbage", GARBAGE)
    def test_a_corrupt_record_is_a_typed_error(self, store: IdempotencyStore, garbage: str) -> None:
        record = make_record(unique("k"), "act-corrupt")
        assert store.reserve(record) is None
        self.write_raw(store, record.capability_id, record.key, _garbage(record)[garbage])
        reads: Mapping[str, Callable[[], object]] = {
            "get": lambda: store.get(record.capability_id, record.key),
            "reserve": lambda: store.reserve(make_record(record.key, "act-next")),
            "complete": lambda: store.complete(record.capability_id, record.key, {"status": "completed"}),
            "get_by_action": lambda: store.get_by_action(record.action_id),
        }
        for name, read in reads.items():
            try:
                answer = read()
            except CorruptRecordError as exc:
                assert exc.details.get("reason") == "corrupt_record", exc.details
                continue
            if name == "get_by_action" and garbage == "misplaced" and answer is None:
                continue  # the index led to a record of another action: it is not this action's
            pytest.fail(f"{name}() on a corrupt record ({garbage}) answered {answer!r}, not CorruptRecordError")
        # An operator can always clear it (forget), and the key is free again.
        assert store.forget(record.capability_id, record.key) is True
        fresh = make_record(record.key, "act-fresh")
        assert store.reserve(fresh) is None
        assert_same(store.get(fresh.capability_id, fresh.key), fresh)

    # ------------------------------------------------------------------ close

    def test_close_may_be_called_twice(self, store: IdempotencyStore) -> None:
        assert store.reserve(make_record(unique("k"), "act-close")) is None
        store.close()
        store.close()
