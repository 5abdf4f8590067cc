"""Engines from URLs, and the versioned schema every table of this package lives in.

The table ``hermes_sdk_schema`` holds one row per component (``idempotency``, ``approval_queue``)
with the version of its tables. It is created, with the component's tables, on first use, in one
transaction (PostgreSQL serialises concurrent first uses with an advisory lock). A later release
registers a migration ``(component, from_version) -> callable(connection)``; a database whose
schema is newer than this release knows is refused with :class:`SchemaVersionError`.
"""

from __future__ import annotations

import importlib.util
import math
import time
from typing import Any, Callable, Optional, Union

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine, make_url

from hermes_sdk.errors import PluginError
from hermes_sdk.plugin import CorruptRecordError as CoreCorruptRecordError
from hermes_sdk.plugin import private_sqlite_files

from .plugin import may_claim

try:
    from hermes_sdk.plugin import store_deadline as store_deadline
except ImportError:  # an SDK before 0.3: no call bound reaches the store
    def store_deadline() -> Optional[float]:
        return None

SCHEMA_TABLE = "hermes_sdk_schema"
#: Seconds a new PostgreSQL connection may take (unless the URL says ``connect_timeout``).
CONNECT_TIMEOUT = 5
#: SQLite's wait for another writer's lock, outside a call's deadline (milliseconds).
SQLITE_BUSY_MS = 30000
#: (component, from_version) -> migration that brings the component's tables to from_version + 1.
MIGRATIONS: dict[tuple[str, int], Callable[[Connection], None]] = {}


class SchemaVersionError(PluginError):
    """The database holds a schema version this release cannot use (newer, or no migration path)."""


class CorruptRecordError(CoreCorruptRecordError):
    """A row could not be decoded, or does not belong where it was found (a typed error, never a guess)."""


def schema_table(metadata: sa.MetaData) -> sa.Table:
    """The version table, in ``metadata`` (shared by every component)."""
    existing = metadata.tables.get(SCHEMA_TABLE)
    if existing is not None:
        return existing
    return sa.Table(SCHEMA_TABLE, metadata,
                    sa.Column("component", sa.String(64), primary_key=True),
                    sa.Column("version", sa.Integer, nullable=False),
                    sa.Column("updated_at", sa.Float, nullable=False))


def sqlalchemy_url(url: str) -> Optional[URL]:
    """The SQLAlchemy URL a store URL stands for, or None when this package does not claim it.

    ``postgresql://`` and ``postgres://`` use psycopg 3 on SQLAlchemy 2 (psycopg2 when only that is
    installed), psycopg2 on SQLAlchemy 1.4 (which has no psycopg 3 dialect); ``mysql://`` uses PyMySQL
    when mysqlclient is not installed; ``sql+<any SQLAlchemy URL>`` (``sql+sqlite:///app.db``) is
    taken as given.
    """
    if not may_claim(url):
        return None
    text = url.strip()
    if text.lower().startswith("sql+"):
        text = text[4:]
    scheme = text.split(":", 1)[0].lower()
    if scheme in ("postgresql", "postgres"):
        text = "postgresql+" + postgresql_driver() + text[len(scheme):]
    elif scheme == "mysql":
        # A probe, not an import: mysqlclient is the user's choice, never this package's dependency.
        if importlib.util.find_spec("MySQLdb") is None:
            text = "mysql+pymysql" + text[len(scheme):]
    try:
        return make_url(text)
    except Exception:
        return None


def postgresql_driver() -> str:
    """The DBAPI driver ``postgresql://`` means here: SQLAlchemy 1.4 knows only psycopg2 of the two,
    and a legacy application on SQLAlchemy 2 may have only psycopg2 installed (probes, not imports)."""
    if int(sa.__version__.split(".")[0]) < 2:
        return "psycopg2"
    if importlib.util.find_spec("psycopg") is None and importlib.util.find_spec("psycopg2") is not None:
        return "psycopg2"
    return "psycopg"


def _sqlite_begin_immediate(engine: Engine, path: str) -> None:
    """SQLite: every transaction takes the write lock first (BEGIN IMMEDIATE), so read-then-write
    steps wait for another writer instead of failing (SQLAlchemy's documented recipe); the
    database file ``path`` and its side files stay 0600."""

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=%d" % SQLITE_BUSY_MS)
        finally:
            cur.close()
        private_sqlite_files(path)  # the -wal and -shm files sqlite may have created just now

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # Within a call, the wait for the lock ends at the call's deadline: an abandoned store
        # call then ends too, having written nothing.
        ms = busy_ms(store_deadline())
        if conn.info.get("busy_ms") != ms:
            conn.exec_driver_sql("PRAGMA busy_timeout=%d" % ms)
            conn.info["busy_ms"] = ms
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def busy_ms(deadline: Optional[float]) -> int:
    """Milliseconds to wait for a lock: until ``deadline`` (epoch seconds, at least 1 ms), or the default."""
    if deadline is None:
        return SQLITE_BUSY_MS
    return max(1, min(SQLITE_BUSY_MS, math.ceil((deadline - time.time()) * 1000)))


def make_engine(url_or_engine: Union[str, URL, Engine], **engine_kwargs: Any) -> tuple[Engine, bool]:
    """An engine (and whether the caller owns it) from a store URL, a SQLAlchemy URL or an engine."""
    if isinstance(url_or_engine, Engine):
        return url_or_engine, False
    if isinstance(url_or_engine, str):
        parsed = sqlalchemy_url(url_or_engine) or make_url(url_or_engine)
    else:
        parsed = url_or_engine
    kwargs: dict[str, Any] = {"pool_pre_ping": True, "future": True}
    if parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
        # A frozen server: a new connection gives up (libpq waits forever by default).
        kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT}
    sqlite_path = ""
    if parsed.get_backend_name() == "sqlite":
        kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
        # a file database (not :memory:, not a file: URI) is made 0600 before sqlite first opens it: like
        # every other store file (records hold model output); sqlite gives its -wal and -shm that mode.
        if parsed.database and parsed.database != ":memory:" and parsed.query.get("uri") not in ("true", "1"):
            sqlite_path = parsed.database
            private_sqlite_files(sqlite_path)
            if int(sa.__version__.split(".")[0]) < 2:
                # SQLAlchemy 1.4 opens a file database anew for every use (NullPool): pool it, as 2.0
                # does, so the pragmas run once per connection and the WAL is not checkpointed away.
                kwargs["poolclass"] = sa.pool.QueuePool
    kwargs.update(engine_kwargs)
    engine = sa.create_engine(parsed, **kwargs)
    if engine.dialect.name == "sqlite":
        _sqlite_begin_immediate(engine, sqlite_path)
    return engine, True


def ensure_schema(engine: Engine, metadata: sa.MetaData, component: str, version: int) -> None:
    """Create the component's tables and version row on first use; migrate or refuse other versions."""
    table = schema_table(metadata)
    for attempt in range(3):
        try:
            with engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(7412903311)"))
                metadata.create_all(conn, checkfirst=True)
                for table in metadata.sorted_tables:  # an index a later release added to an existing table
                    for index in table.indexes:
                        index.create(conn, checkfirst=True)
                row = conn.execute(sa.select(table.c.version).where(table.c.component == component)).first()
                if row is None:
                    conn.execute(table.insert().values(component=component, version=version,
                                                       updated_at=time.time()))
                    return
                found = int(row[0])
                while found < version:
                    migrate = MIGRATIONS.get((component, found))
                    if migrate is None:
                        raise SchemaVersionError(
                            f"the {component} tables are at schema version {found}; this release needs "
                            f"{version} and has no migration from it", details={"component": component,
                                                                                 "found": found,
                                                                                 "expected": version})
                    migrate(conn)
                    found += 1
                    conn.execute(table.update().where(table.c.component == component)
                                 .values(version=found, updated_at=time.time()))
                if found > version:
                    raise SchemaVersionError(
                        f"the {component} tables are at schema version {found}, newer than this release "
                        f"({version}); upgrade hermes-sdk-sql", details={"component": component, "found": found,
                                                                        "expected": version})
                return
        except (sa.exc.IntegrityError, sa.exc.ProgrammingError, sa.exc.OperationalError):
            # Two first uses raced to create the tables (SQLite, MySQL: DDL is not transactional).
            if attempt == 2:
                raise
            time.sleep(0.05 * (attempt + 1))
