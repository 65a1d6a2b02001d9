"""A persistent catalog: Spark's Hive metastore in a directory (embedded Derby), or an external one.

``sparkseq.session(warehouse=DIR)``, ``python -m sparkseq sql --warehouse DIR`` and the
servers (by default: ``sparkseq-warehouse/`` in their working directory) keep Spark's
catalog — databases, tables, views — in one directory, so that they survive the process::

    DIR/metastore_db/  the Hive metastore: an embedded Derby database, one process at a time
    DIR/warehouse/     the files of managed tables (spark.sql.warehouse.dir)
    DIR/derby.log      Derby's log
    DIR/orphaned/      directories of managed tables that no table owned, moved aside at start

It is Spark's own Hive catalog (``spark.sql.catalogImplementation=hive``; the pyspark wheel
ships Hive 2.3's metastore client, DataNucleus and Derby), set up with three settings:
the catalog implementation, ``spark.sql.warehouse.dir`` and the metastore's JDBC URL
(``spark.hadoop.javax.jdo.option.ConnectionURL``). An *external* metastore — a Hive
metastore service (``spark.hadoop.hive.metastore.uris``) or a metastore database of its
own (``spark.hadoop.javax.jdo.option.ConnectionURL`` and its driver settings) — is
configured by Spark's and Hive's standard settings, in ``conf=``/``--conf``,
``spark-defaults.conf`` or ``hive-site.xml`` of Spark's configuration directory: where
one of them names a metastore, sparkseq sets up no Derby database and leaves the
metastore to them (:func:`external_metastore`).

Derby embedded allows one process per database: :func:`claim` finds a database another
process has open before Spark starts (its lock file, ``metastore_db/dbex.lck``) and
raises :class:`CatalogInUseError` naming the directory and the process; Derby itself
would fail only after Hive's retries, some 20 s later, with an error six causes deep.

A managed table's directory must be absent or empty when the table is created
(Spark's ``LOCATION_ALREADY_EXISTS``). A process stopped uncleanly between writing a
table's files and recording the table (``CREATE TABLE ... AS SELECT`` writes first), or
between forgetting a table and deleting its files, leaves a directory that blocks
creating that table again. :func:`open_catalog` moves such directories — inside the
warehouse directory, owned by no table or database of the catalog — to ``DIR/orphaned/``
when the process opens its own Derby metastore, before any statement runs: nothing is
deleted, and nothing is moved for an external metastore, which other processes may be
writing through at that moment.

Without a persistent catalog (Spark's in-memory catalog), managed tables vanish with the
process; their files go to a directory of that process (:func:`memory_catalog_tables`),
removed when the process exits or, after an unclean stop, by the next process to start.
"""

from __future__ import annotations

import argparse
import atexit
import fcntl
import glob
import os
import re
import shutil
import socket
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from udafs.errors import SparkSeqError

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

#: The servers' catalog directory unless ``--warehouse`` names another (relative to their working directory).
DEFAULT_DIRECTORY = "sparkseq-warehouse"
METASTORE = "metastore_db"
TABLES = "warehouse"
DERBY_LOG = "derby.log"
ORPHANED = "orphaned"

CATALOG_IMPLEMENTATION = "spark.sql.catalogImplementation"
WAREHOUSE_DIR = "spark.sql.warehouse.dir"
CONNECTION_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
METASTORE_URIS = "spark.hadoop.hive.metastore.uris"
#: Settings naming an external metastore; with one of them sparkseq sets up no Derby database.
EXTERNAL_METASTORE = (METASTORE_URIS, CONNECTION_URL)
#: The same settings as Hive names them (in hive-site.xml).
HIVE_METASTORE_KEYS = ("hive.metastore.uris", "javax.jdo.option.ConnectionURL")
#: Derby holds an exclusive lock on this file of a database while it has the database open.
DERBY_LOCK = "dbex.lck"


class CatalogError(SparkSeqError):
    """The persistent catalog cannot be opened (the message says why)."""


class CatalogInUseError(CatalogError):
    """Another process has the directory's embedded Derby metastore open."""


class OrphanedDirectoryWarning(UserWarning):
    """Directories of managed tables that no table owned were moved out of the warehouse."""


@dataclass(frozen=True)
class Warehouse:
    """A persistent catalog's directory (see the module docstring); :func:`resolve` makes one."""

    directory: Path
    #: What configures an external metastore (a setting, or the file naming it); None: Derby in ``metastore``.
    external: str | None = None

    @property
    def metastore(self) -> Path:
        return self.directory / METASTORE

    @property
    def tables(self) -> Path:
        return self.directory / TABLES

    @property
    def derby_log(self) -> Path:
        return self.directory / DERBY_LOG

    @property
    def orphaned(self) -> Path:
        return self.directory / ORPHANED

    @property
    def derby_url(self) -> str:
        return f"jdbc:derby:;databaseName={self.metastore};create=true"

    def conf(self, user: Mapping[str, str]) -> dict[str, str]:
        """Spark settings for this catalog; ``user``'s settings (applied after these) win."""
        settings = {CATALOG_IMPLEMENTATION: "hive"}
        if WAREHOUSE_DIR not in user:
            settings[WAREHOUSE_DIR] = str(self.tables)
        if self.external is None:
            settings[CONNECTION_URL] = self.derby_url
        return settings


def resolve(directory: str | os.PathLike[str], conf: Mapping[str, str] | None = None) -> Warehouse:
    """The catalog in ``directory`` (made absolute; created when the session starts), with
    the external metastore ``conf`` or Spark's configuration directory names, if any."""
    path = Path(directory).expanduser().absolute()
    if ";" in str(path):  # Derby's URL separates its attributes with ';'
        raise CatalogError(f"the catalog directory {path} contains ';', which Derby's URL cannot hold; choose "
                           "another directory")
    if path.exists() and not path.is_dir():
        raise CatalogError(f"the catalog directory {path} is a file; choose a directory")
    return Warehouse(path, external_metastore(conf or {}))


def external_metastore(conf: Mapping[str, str]) -> str | None:
    """What names an external metastore, or None: a setting of :data:`EXTERNAL_METASTORE`
    in ``conf``, else in ``spark-defaults.conf``, else a ``hive-site.xml`` naming a metastore,
    both in Spark's configuration directory (``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``)."""
    for key in EXTERNAL_METASTORE:
        if key in conf:
            return key
    folder = spark_conf_dir()
    defaults = spark_defaults()
    for key in EXTERNAL_METASTORE:
        if key in defaults:
            return f"{key} in {folder / 'spark-defaults.conf'}"
    hive_site = folder / "hive-site.xml"
    if hive_site.is_file() and any(key in hive_site.read_text(errors="replace") for key in HIVE_METASTORE_KEYS):
        return str(hive_site)
    return None


def catalog_implementation(settings: Mapping[str, str]) -> str:
    """The catalog a JVM started with ``settings`` (which win over ``spark-defaults.conf``) will have."""
    if CATALOG_IMPLEMENTATION in settings:
        return settings[CATALOG_IMPLEMENTATION]
    return spark_defaults().get(CATALOG_IMPLEMENTATION, "in-memory")


def spark_defaults() -> dict[str, str]:
    """The settings of ``spark-defaults.conf`` in Spark's configuration directory, as spark-submit reads them."""
    defaults = spark_conf_dir() / "spark-defaults.conf"
    settings = {}
    if defaults.is_file():
        for line in defaults.read_text(errors="replace").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                key, value = (re.split(r"\s*[\s=]\s*", line, maxsplit=1) + [""])[:2]
                settings[key] = value
    return settings


def spark_conf_dir() -> Path:
    """Spark's configuration directory as spark-submit finds it (pyspark's own when ``SPARK_HOME`` is unset)."""
    if os.environ.get("SPARK_CONF_DIR"):
        return Path(os.environ["SPARK_CONF_DIR"])
    home = os.environ.get("SPARK_HOME")
    if not home:
        import pyspark

        home = str(Path(pyspark.__file__).resolve().parent)
    return Path(home) / "conf"


# --- the command line -----------------------------------------------------------------------


def add_catalog_arguments(parser: argparse.ArgumentParser, default: str | None) -> None:
    """``--warehouse DIR`` and ``--conf KEY=VALUE``, for the servers and the ``sql``/``explain`` commands."""
    where = (f"default: {default}/ in the working directory" if default is not None
             else "default: none, an in-memory catalog")
    parser.add_argument("--warehouse", metavar="DIR", default=default,
                        help=f"keep Spark's catalog (databases, tables, views) in DIR, so that it survives restarts: "
                             f"DIR/metastore_db (Hive metastore, embedded Derby; one process at a time) and "
                             f"DIR/warehouse (managed tables' files); {where}")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting, as spark-submit's --conf; may be repeated. An external metastore: "
                             "--conf spark.hadoop.hive.metastore.uris=thrift://HOST:9083 (or the metastore "
                             "database's spark.hadoop.javax.jdo.option.* settings)")


def conf_settings(values: Sequence[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` values as a mapping; ``ValueError`` for a value without ``=``."""
    settings = {}
    for value in values:
        key, sep, setting = value.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf takes KEY=VALUE, got {value!r}")
        settings[key.strip()] = setting
    return settings


# --- before Spark starts: is the metastore free? ---------------------------------------------


def claim(warehouse: Warehouse) -> None:
    """Create the directory and raise :class:`CatalogInUseError` when another process has
    its Derby metastore open (nothing to check for an external metastore)."""
    try:
        warehouse.directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CatalogError(f"cannot create the catalog directory {warehouse.directory}: {exc.strerror}") from None
    if warehouse.external is None:
        holder = derby_holder(warehouse.metastore)
        if holder is not None:
            raise in_use(warehouse, holder)


def in_use(warehouse: Warehouse, holder: str) -> CatalogInUseError:
    return CatalogInUseError(
        f"the catalog in {warehouse.directory} is in use by {holder}: its metastore ({warehouse.metastore}, an "
        "embedded Derby database) can be open in one process at a time. Stop that process, connect to it instead "
        "(is it a sparkseq server?), or choose another directory (--warehouse DIR, sparkseq.session(warehouse=...))")


def derby_holder(metastore: Path) -> str | None:
    """Who has the Derby database ``metastore`` open ("process 123 (python -m sparkseq ...)",
    or "another process" when that cannot be told), or None when nobody has."""
    lock = metastore / DERBY_LOCK
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:  # no database yet, or never opened by a Derby with file locking
        return None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return _lock_owner(lock) or "another process"
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _lock_owner(path: Path) -> str | None:
    """The process holding a POSIX lock on ``path`` according to Linux's /proc/locks; for
    a Spark JVM, the Python process that started it."""
    try:
        inode = path.stat().st_ino
        locks = Path("/proc/locks").read_text()
    except OSError:
        return None
    for line in locks.splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 12723 fe:00:2155543 0 EOF"
        if len(fields) >= 6 and fields[1] == "POSIX" and fields[5].rsplit(":", 1)[-1] == str(inode):
            pid = int(fields[4])
            parent = _parent_pid(pid) if Path(_command(pid).split(" ", 1)[0]).name == "java" else None
            if parent is not None and "python" in Path(_command(parent).split(" ", 1)[0]).name:
                return f"process {parent} ({_command(parent)}; its Spark JVM is process {pid})"
            return f"process {pid} ({_command(pid)})"
    return None


def _parent_pid(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^PPid:\s*(\d+)", status, re.MULTILINE)
    return int(found.group(1)) if found else None


def _command(pid: int) -> str:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(word.decode(errors="replace") for word in words if word)
    return text if len(text) <= 80 else text[:77] + "..."


# --- once Spark runs: open the catalog, move orphaned directories aside ------------------------

_opened: set[Path] = set()  # catalogs this process opened (and swept) already


def open_catalog(spark: SparkSession, warehouse: Warehouse) -> list[tuple[Path, Path]]:
    """Open ``warehouse``'s catalog in ``spark`` now (not at its first statement), so that a
    catalog that cannot be opened fails here; for a Derby metastore, move orphaned managed-table
    directories aside (module docstring) once per process. Returns the moves (from, to).

    Raises :class:`CatalogError` when ``spark`` runs another catalog (a session started
    earlier in this process) or the metastore cannot be opened; :class:`CatalogInUseError`
    when another process has it open.
    """
    check_same_catalog(spark.sparkContext.getConf(), warehouse)
    try:
        spark.catalog.listDatabases()
    except Exception as exc:  # noqa: BLE001 - any failure of Hive's client; reported with its first line
        holder = derby_holder(warehouse.metastore) if warehouse.external is None else None
        if holder is not None:
            raise in_use(warehouse, holder) from None
        where = warehouse.metastore if warehouse.external is None else f"the external metastore ({warehouse.external})"
        raise CatalogError(f"cannot open the catalog in {where}: {_first_line(exc)}") from None
    if warehouse.external is not None or warehouse.directory in _opened:
        return []
    _opened.add(warehouse.directory)
    try:
        databases, owned = catalog_locations(spark)
    except Exception as exc:  # noqa: BLE001 - never move anything without the whole catalog's locations
        warnings.warn(f"not looking for orphaned table directories in {warehouse.tables}: reading the catalog's "
                      f"locations failed: {_first_line(exc)}", OrphanedDirectoryWarning, stacklevel=3)
        return []
    orphans = orphaned_directories(databases, owned, warehouse.tables)
    moves = move_aside(orphans, warehouse)
    if moves:
        listed = "; ".join(f"{source} -> {target}" for source, target in moves)
        warnings.warn(f"moved {len(moves)} director{'y' if len(moves) == 1 else 'ies'} that no table of the "
                      f"catalog owns (left by an unclean stop) out of the warehouse, so that those tables can be "
                      f"created again: {listed}", OrphanedDirectoryWarning, stacklevel=3)
    return moves


def check_same_catalog(conf: SparkConf, warehouse: Warehouse) -> None:
    """Raise :class:`CatalogError` unless the SparkContext whose settings are ``conf`` runs
    ``warehouse``'s catalog: Spark fixes the catalog when a JVM's first session starts, so a
    session started earlier in this process keeps its own."""
    implementation = conf.get(CATALOG_IMPLEMENTATION, "in-memory")
    url = conf.get(CONNECTION_URL, None)
    if implementation != "hive" or (warehouse.external is None and url != warehouse.derby_url):
        running = "an in-memory catalog" if implementation != "hive" else f"the metastore {url or '(Hive default)'}"
        raise CatalogError(f"a Spark session with {running} already runs in this process, and Spark fixes a "
                           f"session's catalog when the first one starts: stop it (spark.stop()) before asking "
                           f"for the catalog in {warehouse.directory}")


def catalog_locations(spark: SparkSession) -> tuple[list[Path], list[Path]]:
    """(database locations, table locations) of the catalog, local directories only."""
    databases: list[Path] = []
    tables: list[Path] = []
    for row in spark.sql("SHOW DATABASES").collect():
        name = _quoted(row[0])
        info = {r["info_name"]: r["info_value"] for r in spark.sql(f"DESCRIBE DATABASE {name}").collect()}
        location = local_path(info.get("Location"))
        if location is not None:
            databases.append(location)
        for table in spark.sql(f"SHOW TABLE EXTENDED IN {name} LIKE '*'").collect():
            if table["isTemporary"]:
                continue
            found = re.search(r"^Location: (.*)$", table["information"], re.MULTILINE)
            location = local_path(found.group(1).strip()) if found else None
            if location is not None:
                tables.append(location)
    return databases, tables


def local_path(uri: str | None) -> Path | None:
    """The local path of a ``file:`` location (or a bare path); None for other file systems."""
    if not uri:
        return None
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        return None
    return Path(unquote(parsed.path)).absolute()


def orphaned_directories(databases: Iterable[Path], tables: Iterable[Path], within: Path) -> list[Path]:
    """Non-empty directories directly inside a database location at or under ``within`` (where
    the database's managed tables go) that are not a table's or database's location, nor
    hold one, nor lie inside a table's location."""
    databases, tables = list(databases), list(tables)
    found = []
    for location in sorted(set(databases)):
        if not (location == within or _inside(location, within)) or not location.is_dir():
            continue
        for child in sorted(location.iterdir()):
            if child.is_symlink() or not child.is_dir() or child.name.startswith((".", "_")):
                continue
            if any(owned == child or _inside(owned, child) for owned in (*databases, *tables)):
                continue
            if any(_inside(child, table) for table in tables):
                continue
            if next(child.iterdir(), None) is None:  # empty: blocks nothing
                continue
            found.append(child)
    return found


def _inside(path: Path, folder: Path) -> bool:
    return path != folder and path.is_relative_to(folder)


def move_aside(directories: Iterable[Path], warehouse: Warehouse) -> list[tuple[Path, Path]]:
    """Move each directory to ``DIR/orphaned/<UTC time>/<its path in the warehouse>``."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moves = []
    for source in directories:
        target = warehouse.orphaned / stamp / source.relative_to(warehouse.tables)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(source), str(target))
        moves.append((source, target))
    return moves


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- without a persistent catalog ------------------------------------------------------------


def memory_catalog_tables(scratch: Path) -> Path:
    """Where the managed tables of this process's in-memory catalog go:
    ``scratch/warehouses/<host>-<pid>``. They vanish with the catalog, so a table created
    again by a later process never finds the files of an earlier one in its way."""
    return scratch / "warehouses" / f"{_host()}-{os.getpid()}"


def reset_memory_catalog_tables(scratch: Path) -> None:
    """Before this process starts Spark with an in-memory catalog: remove what an earlier
    in-memory catalog of this process, or of a process of this host that is gone, left;
    remove this process's at exit. (The host's name keeps a process of another machine or
    container sharing the scratch directory, whose process ids mean nothing here, safe.)"""
    folder = memory_catalog_tables(scratch)
    shutil.rmtree(folder, ignore_errors=True)
    prefix = f"{_host()}-"
    for other in folder.parent.glob(f"{glob.escape(prefix)}*") if folder.parent.is_dir() else ():
        pid = other.name.removeprefix(prefix)
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(other, ignore_errors=True)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


__all__ = ["CatalogError", "CatalogInUseError", "DEFAULT_DIRECTORY", "OrphanedDirectoryWarning", "Warehouse",
           "add_catalog_arguments", "catalog_implementation", "check_same_catalog", "claim", "conf_settings",
           "external_metastore", "memory_catalog_tables", "open_catalog", "orphaned_directories", "resolve"]
