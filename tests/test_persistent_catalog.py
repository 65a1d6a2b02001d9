"""A persistent catalog (``sparkseq.spark.warehouse``): Spark's Hive metastore in embedded Derby,
kept in a directory by ``--warehouse DIR`` / ``sparkseq.session(warehouse=...)``.

The end-to-end test runs real processes on one directory: the ``sql`` command creates a
database and tables, a Thrift server sees them and its JDBC clients add tables and views,
the server is killed with SIGKILL (its whole process group: Python and JVM), a second
server sees everything and re-creates tables whose directories the unclean stop left
behind, while the ``sql`` command cannot open the catalog the server has open. Then the
``sql`` command without a persistent catalog runs a ``CREATE TABLE ... AS`` twice. The
other tests need no Spark, or only the shared in-memory session.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from sparkseq.spark import warehouse as warehouses
from sparkseq.spark.warehouse import CatalogError, CatalogInUseError, Warehouse
from tests.test_thrift_server import free_port, listening, query, read_banner

ROOT = Path(__file__).resolve().parent.parent

# --- settings, without Spark ------------------------------------------------------------------


def test_settings_of_a_catalog_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "no-conf"))
    store = warehouses.resolve(tmp_path / "cat")
    assert store.directory == tmp_path / "cat" and store.external is None
    assert store.conf({}) == {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(tmp_path / "cat" / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={tmp_path / 'cat' / 'metastore_db'};create=true"}
    # the user's settings win: a warehouse elsewhere (say on a shared file system)
    assert "spark.sql.warehouse.dir" not in store.conf({"spark.sql.warehouse.dir": "hdfs:///w"})
    with pytest.raises(CatalogError, match="contains ';'"):
        warehouses.resolve(tmp_path / "a;b")
    (tmp_path / "file").write_text("")
    with pytest.raises(CatalogError, match="is a file"):
        warehouses.resolve(tmp_path / "file")


def test_an_external_metastore_replaces_derby(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    uris = {"spark.hadoop.hive.metastore.uris": "thrift://127.0.0.1:9083"}
    store = warehouses.resolve(tmp_path / "cat", uris)
    assert store.external == "spark.hadoop.hive.metastore.uris"
    assert store.conf(uris) == {"spark.sql.catalogImplementation": "hive",
                                "spark.sql.warehouse.dir": str(tmp_path / "cat" / "warehouse")}
    assert warehouses.resolve(tmp_path / "cat").external is None
    # Spark's configuration directory: spark-defaults.conf, then a hive-site.xml naming a metastore
    (conf_dir / "spark-defaults.conf").write_text("spark.ui.enabled false\n"
                                                  "spark.hadoop.javax.jdo.option.ConnectionURL jdbc:postgresql:m\n")
    assert warehouses.resolve(tmp_path / "cat").external == (
        f"spark.hadoop.javax.jdo.option.ConnectionURL in {conf_dir / 'spark-defaults.conf'}")
    (conf_dir / "spark-defaults.conf").unlink()
    (conf_dir / "hive-site.xml").write_text("<configuration><property><name>hive.exec.scratchdir</name>"
                                            "<value>/tmp/h</value></property></configuration>")
    assert warehouses.resolve(tmp_path / "cat").external is None  # a hive-site.xml naming no metastore
    (conf_dir / "hive-site.xml").write_text("<configuration><property><name>hive.metastore.uris</name>"
                                            "<value>thrift://h:9083</value></property></configuration>")
    assert warehouses.resolve(tmp_path / "cat").external == str(conf_dir / "hive-site.xml")


def test_hive_support_asked_for_by_hand_keeps_its_tables_files(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkseq.spark.session import default_conf, in_memory_tables, scratch_dir

    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    memory = default_conf("local[2]")
    assert memory["spark.sql.warehouse.dir"] == str(warehouses.memory_catalog_tables(scratch_dir()))
    assert in_memory_tables(memory)  # removed with the process
    hive = {**memory, "spark.sql.catalogImplementation": "hive"}
    assert not in_memory_tables(hive)
    assert hive["spark.sql.warehouse.dir"] == str(scratch_dir() / "warehouse")
    (tmp_path / "spark-defaults.conf").write_text("# Hive for every session\nspark.sql.catalogImplementation  hive\n")
    assert warehouses.catalog_implementation({}) == "hive"
    by_defaults = dict(memory)
    assert not in_memory_tables(by_defaults)
    assert by_defaults["spark.sql.warehouse.dir"] == str(scratch_dir() / "warehouse")
    own = {**memory, "spark.sql.warehouse.dir": str(tmp_path / "mine")}
    assert not in_memory_tables(own) and own["spark.sql.warehouse.dir"] == str(tmp_path / "mine")


# --- directories no table owns ----------------------------------------------------------------


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_only_directories_no_table_or_database_owns_are_moved_aside(tmp_path: Path) -> None:
    store = Warehouse(tmp_path)
    tables = store.tables
    layout = {
        "live/part-0.parquet": "a live table's data",
        "orphan/part-0.parquet": "left by an unclean stop",
        "shop.db/t/part-0.parquet": "a live table of database shop",
        "shop.db/half/part-0.parquet": "left in shop",
        "custom_db/u/part-0.parquet": "a table of a database located inside another's location",
        "ext_parent/ext/part-0.parquet": "an external table inside the warehouse",
        "gone.db/x/part-0.parquet": "a dropped database's leftovers",
        ".hidden/f": "not a table's directory",
        "_spark_metadata/f": "not a table's directory",
    }
    for name, text in layout.items():
        (tables / name).parent.mkdir(parents=True, exist_ok=True)
        (tables / name).write_text(text)
    (tables / "empty").mkdir()
    (tables / "a_file").write_text("not a directory")
    databases = [tables, tables / "shop.db", tables / "custom_db", tmp_path / "elsewhere.db"]
    live = [tables / "live", tables / "shop.db" / "t", tables / "custom_db" / "u", tables / "ext_parent" / "ext"]
    found = warehouses.orphaned_directories(databases, live, tables)
    assert found == [tables / "gone.db", tables / "orphan", tables / "shop.db" / "half"]

    before = _files(tables)
    moves = warehouses.move_aside(found, store)
    assert [source for source, _ in moves] == found
    stamp = moves[0][1].relative_to(store.orphaned).parts[0]
    moved = {f"{stamp}/{name}": text for name, text in before.items()
             if name.split("/")[0] in ("gone.db", "orphan") or name.startswith("shop.db/half/")}
    assert _files(store.orphaned) == moved  # nothing deleted
    assert _files(tables) == {name: text for name, text in before.items() if f"{stamp}/{name}" not in moved}
    assert warehouses.orphaned_directories(databases, live, tables) == []


def test_locations_of_other_file_systems_are_never_local() -> None:
    assert warehouses.local_path("file:/tmp/w/a%20b") == Path("/tmp/w/a b")
    assert warehouses.local_path("/tmp/w/t") == Path("/tmp/w/t")
    assert warehouses.local_path("hdfs://nn:8020/w/t") is None
    assert warehouses.local_path(None) is None


# --- a metastore in use ------------------------------------------------------------------------

HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX)   # what Derby holds on dbex.lck while a database is open
print("held", flush=True)
time.sleep(120)
"""


def test_a_metastore_another_process_has_open_is_refused_with_its_process(tmp_path: Path) -> None:
    store = warehouses.resolve(tmp_path / "cat")
    warehouses.claim(store)  # no database yet
    store.metastore.mkdir()
    lock = store.metastore / "dbex.lck"
    lock.write_text("")
    warehouses.claim(store)  # a database nobody has open
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(CatalogInUseError) as raised:
            warehouses.claim(store)
        assert str(raised.value).startswith(f"the catalog in {store.directory} is in use by process {holder.pid} (")
        assert f"its metastore ({store.metastore}, an embedded Derby database)" in str(raised.value)
    finally:
        holder.kill()
        holder.wait()
    warehouses.claim(store)
    fd = os.open(lock, os.O_RDWR)  # claim() let go of the lock it tried
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_tables_of_gone_in_memory_catalogs_are_removed(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    folder = warehouses.memory_catalog_tables(tmp_path)
    host = socket.gethostname()
    assert folder == tmp_path / "warehouses" / f"{host}-{os.getpid()}"
    names = [f"{host}-{dead}", f"{host}-{os.getpid()}", f"{host}-1", f"elsewhere-{dead}"]
    for name in names:
        (tmp_path / "warehouses" / name / "t").mkdir(parents=True)
        (tmp_path / "warehouses" / name / "t" / "part-0").write_text("x")
    warehouses.reset_memory_catalog_tables(tmp_path)
    # this process's earlier catalog and the gone process's are removed; a live process's
    # stays, and so does one of another host (its process ids mean nothing here)
    assert sorted(p.name for p in (tmp_path / "warehouses").iterdir()) == sorted([f"{host}-1", f"elsewhere-{dead}"])


def test_the_test_session_keeps_its_tables_in_a_directory_of_its_own(spark) -> None:
    from sparkseq.spark.session import scratch_dir

    assert spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:") == str(
        warehouses.memory_catalog_tables(scratch_dir()))


def test_a_session_with_another_catalog_in_this_process_is_refused(spark, tmp_path: Path) -> None:
    import sparkseq

    before = dict(spark.sparkContext.getConf().getAll())
    with pytest.raises(CatalogError, match=r"a Spark session with an in-memory catalog already runs in this process"):
        sparkseq.session(warehouse=tmp_path / "cat")
    assert dict(spark.sparkContext.getConf().getAll()) == before
    assert not (tmp_path / "cat").exists()


def test_connect_sessions_take_no_warehouse() -> None:
    import sparkseq

    with pytest.raises(ValueError, match="connect-server --warehouse DIR"):
        sparkseq.session("sc://127.0.0.1:1", warehouse="w")


# --- processes on one directory ----------------------------------------------------------------

#: The init file of both servers: a table from a temporary view, re-made at each start, so
#: that tools which qualify names with a database (`default.funnel_table`) find it.
INIT = """CREATE TEMP VIEW pc_clicks AS SELECT * FROM VALUES
  (1, TIMESTAMP'2024-05-01 10:00:00', 'view'), (1, TIMESTAMP'2024-05-01 10:01:00', 'buy'),
  (2, TIMESTAMP'2024-05-01 10:00:00', 'buy') AS t(customer_id, ts, action);
CREATE TEMP VIEW pc_funnels AS
SELECT customer_id, seq_count(ts, action, 'SEQ(view, buy)') AS n FROM pc_clicks GROUP BY customer_id;
DROP TABLE IF EXISTS funnel_table;
CREATE TABLE funnel_table AS SELECT * FROM pc_funnels
"""

#: What the JDBC clients of the first server create.
CREATE = [
    "CREATE TABLE shop.seed (customer_id INT, ts TIMESTAMP, action STRING) USING parquet",
    "INSERT INTO shop.seed VALUES (1, TIMESTAMP'2024-05-01 10:00:00', 'view'), "
    "(1, TIMESTAMP'2024-05-01 10:02:00', 'buy'), (2, TIMESTAMP'2024-05-01 10:00:00', 'view')",
    "CREATE TABLE shop.funnels AS SELECT customer_id, seq_count(ts, action, 'SEQ(view, buy)') AS n "
    "FROM shop.seed GROUP BY customer_id",
    "CREATE VIEW shop.buyers AS SELECT DISTINCT customer_id FROM shop.seed WHERE action = 'buy'",
    "CREATE TABLE ext USING parquet LOCATION '{tables}/ext_data' AS SELECT 7 AS seven",
]

#: Directories a stop in the middle of CREATE TABLE ... AS SELECT leaves (files first, then the table).
LEFTOVERS = ["shop.db/half_written/part-00000.snappy.parquet", "dbt_seed/part-00000.snappy.parquet"]


@dataclass
class Running:
    process: subprocess.Popen[str]
    port: int
    stderr: IO[str]
    banner: str

    def connect(self) -> object:
        impala = pytest.importorskip("impala.dbapi")
        return impala.connect(host="127.0.0.1", port=self.port, auth_mechanism="PLAIN", user="t", password="-",
                              timeout=180)


def start_server(folder: Path, name: str, store: Path) -> Running:
    port = free_port()
    stderr = (folder / f"{name}.err").open("w+")
    process = subprocess.Popen([sys.executable, "-m", "sparkseq", "thriftserver", "--port", str(port),
                                "--warehouse", str(store), "--init-file", str(folder / "init.sql")],
                               cwd=folder, stdout=subprocess.PIPE, stderr=stderr, text=True,
                               start_new_session=True)  # its own process group, to kill Python and JVM at once
    return Running(process, port, stderr, read_banner(process, stderr))


def execute(connection: object, sql: str) -> None:
    cursor = connection.cursor()  # type: ignore[attr-defined]
    try:
        cursor.execute(sql)
    finally:
        cursor.close()


def sql_command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sparkseq", "sql", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("persistent")
    (path / "init.sql").write_text(INIT)
    yield path


def test_catalog_survives_an_unclean_stop_and_blocks_nothing(folder: Path) -> None:
    store = folder / "catalog"
    tables = store / "warehouse"
    # 1. the sql command creates a database and a table in the catalog
    made = sql_command("--warehouse", str(store), "CREATE DATABASE shop; CREATE TABLE shop.cli_made AS "
                       "SELECT 1 AS one", cwd=folder)
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in store.iterdir()) == ["derby.log", "metastore_db", "warehouse"]

    # 2. a server sees it; its clients create tables and views; then it is killed
    first = start_server(folder, "first", store)
    try:
        assert f"catalog    {store} (Hive metastore in Derby); persists across restarts" in first.banner, \
            first.banner
        connection = first.connect()
        try:
            assert query(connection, "SELECT one FROM shop.cli_made") == [(1,)]
            for statement in CREATE:
                execute(connection, statement.format(tables=tables))
            assert query(connection, "SELECT * FROM default.funnel_table ORDER BY customer_id") == [(1, 1), (2, 0)]
        finally:
            connection.close()
    finally:
        os.killpg(first.process.pid, signal.SIGKILL)
        first.process.wait()
        first.stderr.close()
    for name in LEFTOVERS:  # what a kill in the middle of CREATE TABLE ... AS SELECT leaves
        (tables / name).parent.mkdir(parents=True)
        (tables / name).write_bytes(b"PAR1 half written")

    # 3. a second server on the same directory
    second = start_server(folder, "second", store)
    try:
        # ... has the catalog open: another process cannot, and says so before starting Spark
        started = time.monotonic()
        refused = sql_command("--warehouse", str(store), "SELECT 1", cwd=folder)
        assert refused.returncode == 1
        assert f"CatalogInUseError: the catalog in {store} is in use by process {second.process.pid} (" \
            in refused.stderr
        assert time.monotonic() - started < 20
        # ... moved the leftovers aside, keeping their files, and said so on stderr
        second.stderr.seek(0)
        log = second.stderr.read()
        assert "OrphanedDirectoryWarning: moved 2 directories that no table of the catalog owns" in log
        for name in LEFTOVERS:
            assert not (tables / name).exists()
            assert len(list((store / "orphaned").glob(f"*/{name}"))) == 1
        assert (tables / "ext_data").is_dir()  # an external table's files inside the warehouse stay
        connection = second.connect()
        try:
            assert ("shop",) in query(connection, "SHOW DATABASES")
            assert query(connection, "SELECT * FROM shop.funnels ORDER BY customer_id") == [(1, 1), (2, 0)]
            assert query(connection, "SELECT * FROM shop.buyers") == [(1,)]
            assert query(connection, "SELECT count(*) FROM shop.seed") == [(3,)]
            assert query(connection, "SELECT * FROM ext") == [(7,)]
            assert query(connection, "SELECT * FROM default.funnel_table ORDER BY customer_id") == [(1, 1), (2, 0)]
            # the tables whose directories the kill left are created again
            execute(connection, "CREATE TABLE shop.half_written AS SELECT 1 AS x")
            execute(connection, "CREATE TABLE dbt_seed (a INT) USING parquet")
            execute(connection, "INSERT INTO dbt_seed VALUES (5)")
            assert query(connection, "SELECT * FROM shop.half_written UNION ALL SELECT * FROM dbt_seed") == \
                [(1,), (5,)]
        finally:
            connection.close()
        second.process.send_signal(signal.SIGTERM)
        assert second.process.wait(timeout=60) == 0
        assert not listening(second.port)
    finally:
        if second.process.poll() is None:
            os.killpg(second.process.pid, signal.SIGKILL)
            second.process.wait()
        second.stderr.close()


def test_sql_command_without_a_catalog_runs_create_table_as_again(folder: Path) -> None:
    script = "CREATE TABLE again AS SELECT 2 AS two; SELECT * FROM again"
    for _ in range(2):  # the second run used to meet the first one's files: LOCATION_ALREADY_EXISTS
        done = sql_command(script, cwd=folder)
        assert done.returncode == 0, done.stderr
        assert "|two|" in done.stdout and "|2  |" in done.stdout
