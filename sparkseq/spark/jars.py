"""The Java that ships compiled: sparkseq's jars, each checked against its source, and the
command that builds them.

``sparkseq/jvm/SparkSeqExtension.java`` (the parser extension, :mod:`sparkseq.spark.jvm_parser`)
and ``sparkseq/jvm/SparkSeqAggregates.java`` (the JVM path's aggregate,
:mod:`sparkseq.spark.jvm_path`) ship as Java 17 bytecode built against the pinned pyspark's
jars: no JDK is needed at run time. Each jar records the SHA-256 of the source it was built
from; a jar that does not match the shipped source is refused. Rebuild after editing a source::

    python -m sparkseq.spark.jars --build     # needs a JDK 17+ (javac)
    python -m sparkseq.spark.jars --check     # does each jar match its source?

The settings that put them on Spark's class path (:func:`extension_conf`,
:func:`aggregates_conf`) must be given before the JVM starts; :func:`sparkseq.session` does so.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pyspark

from udafs.errors import SparkSeqError

CLASS_NAME = "sparkseq.jvm.SparkSeqExtension"
SOURCE = Path(__file__).resolve().parents[1] / "jvm" / "SparkSeqExtension.java"
JAR = SOURCE.with_name("sparkseq-extension.jar")
#: Inside the jar: what it was built from (``key=value`` lines).
BUILD_INFO = "META-INF/sparkseq-extension.properties"
JAVA_RELEASE = "17"  # Spark 4 runs on Java 17 and later
#: The JVM path's aggregate (:mod:`sparkseq.spark.jvm_path`): its own source and jar, built and
#: checked by the same commands (``--build``, ``--check``) and the same rule as the extension's.
AGGREGATES_SOURCE = SOURCE.with_name("SparkSeqAggregates.java")
AGGREGATES_JAR = SOURCE.with_name("sparkseq-aggregates.jar")
#: The live operator in the JVM (:mod:`sparkseq.running.live`), compiled into the same jar.
LIVE_SOURCE = SOURCE.with_name("SparkSeqLive.java")
#: Everything :data:`AGGREGATES_JAR` is built from (its recorded digest covers them all).
AGGREGATES_SOURCES = (AGGREGATES_SOURCE, LIVE_SOURCE)
JAVAC_TIMEOUT_S = 180  # javac takes 2-3 s here; a loaded 2-core machine can take far longer


class JvmParserUnavailable(SparkSeqError):
    """The parser extension cannot be used; the message says why and what to do instead."""


def source_digest(source: Path | tuple[Path, ...] = SOURCE) -> str:
    """SHA-256 of the Java source, line endings normalised (a Windows checkout hashes alike);
    of several sources, the SHA-256 of their names and digests, one line each."""
    if isinstance(source, tuple):
        if len(source) == 1:
            return source_digest(source[0])
        lines = "".join(f"{s.name} {source_digest(s)}\n" for s in source)
        return hashlib.sha256(lines.encode()).hexdigest()
    return hashlib.sha256(source.read_bytes().replace(b"\r\n", b"\n")).hexdigest()


def build_info(jar: Path = JAR) -> dict[str, str]:
    """What ``jar`` records about its build (``source_sha256``, ``pyspark``, ``javac``, ``release``)."""
    with zipfile.ZipFile(jar) as archive:
        text = archive.read(BUILD_INFO).decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def check_jar(jar: Path = JAR, source: Path | tuple[Path, ...] = SOURCE) -> Path:
    """``jar`` when it exists and was built from the shipped ``source`` (or sources).

    Raises
    ------
    JvmParserUnavailable
        Missing, unreadable, or built from another version of the source.
    """
    try:
        recorded = build_info(jar).get("source_sha256")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise JvmParserUnavailable(f"sparkseq's parser extension {jar} cannot be read ({exc}); reinstall sparkseq, "
                                   "or rebuild it: python -m sparkseq.spark.jars --build (needs a JDK)") from None
    if recorded != source_digest(source):
        names = ", ".join(s.name for s in source) if isinstance(source, tuple) else source.name
        raise JvmParserUnavailable(f"{jar.name} was built from another version of {names}; rebuild it: "
                                   "python -m sparkseq.spark.jars --build (needs a JDK)")
    return jar


def build(jar: Path = JAR) -> Path:
    """Compile the extension with ``javac --release 17`` against the installed pyspark's jars
    and write ``jar``. The jar's bytes depend only on the source and the javac version
    (fixed entry order and timestamps), so a rebuild with the same JDK changes nothing.

    Raises
    ------
    JvmParserUnavailable
        No ``javac``, or compiling failed.
    """
    return compile_jar((SOURCE,), jar, {"source_sha256": source_digest()})


def build_aggregates(jar: Path = AGGREGATES_JAR) -> Path:
    """Compile the JVM path's aggregate and live operator (:data:`AGGREGATES_SOURCES`) into
    ``jar``, as :func:`build`.

    Raises
    ------
    JvmParserUnavailable
        No ``javac``, or compiling failed.
    """
    return compile_jar(AGGREGATES_SOURCES, jar, {"source_sha256": source_digest(AGGREGATES_SOURCES)})


def compile_jar(sources: tuple[Path, ...], jar: Path, info: dict[str, str] | None = None) -> Path:
    """Compile Java ``sources`` with ``javac --release 17`` against the installed pyspark's
    jars into ``jar``, recording ``info`` and the build's pyspark, javac and release in
    :data:`BUILD_INFO` (also what the benches use for their own Java).

    Raises
    ------
    JvmParserUnavailable
        No ``javac``, or compiling failed.
    """
    with tempfile.TemporaryDirectory(prefix="sparkseq-jvm-") as folder:
        classes = Path(folder)
        javac = _javac()
        _compile(javac, classes, sources)
        info = {**(info or {}), "pyspark": pyspark.__version__, "javac": _javac_version(javac),
                "release": JAVA_RELEASE}
        _write_jar(jar, classes, info)
    return jar


def _compile(javac: str, classes: Path, sources: tuple[Path, ...]) -> None:
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    names = ", ".join(source.name for source in sources)
    command = [javac, "--release", JAVA_RELEASE, "-nowarn", "-proc:none", "-encoding", "UTF-8",
               "-cp", str(jars / "*"), "-d", str(classes), *(str(source) for source in sources)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise JvmParserUnavailable(f"compiling {names} took over {JAVAC_TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise JvmParserUnavailable(f"javac could not compile {names} against pyspark "
                                   f"{pyspark.__version__}:\n{done.stderr.strip()}")


def _write_jar(jar: Path, classes: Path, info: dict[str, str]) -> None:
    manifest = "Manifest-Version: 1.0\r\nCreated-By: python -m sparkseq.spark.jars --build\r\n\r\n"
    entries = {"META-INF/MANIFEST.MF": manifest.encode(),
               BUILD_INFO: "".join(f"{k}={v}\n" for k, v in info.items()).encode()}
    for path in sorted(classes.rglob("*.class")):
        entries[path.relative_to(classes).as_posix()] = path.read_bytes()
    partial = jar.with_name(jar.name + ".partial")
    with zipfile.ZipFile(partial, "w") as archive:
        for name, data in entries.items():
            entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, data)
    partial.replace(jar)


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(home) / "bin" / "javac")] if home else []
    candidates.append(shutil.which("javac") or "")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise JvmParserUnavailable("no javac found (a Java runtime without the JDK, or JAVA_HOME pointing at one); "
                               "building the parser extension needs a JDK 17+")


def _javac_version(javac: str) -> str:
    done = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    return (done.stdout or done.stderr).strip().removeprefix("javac ")


def extension_conf(conf: dict[str, str] | None = None) -> dict[str, str]:
    """Spark settings that load the parser extension, merged into ``conf``'s own values.

    Pass the result to :func:`sparkseq.session` or a ``SparkSession.builder`` (only a
    JVM started with them has the extension); :func:`sparkseq.session` does so itself.

    Raises
    ------
    JvmParserUnavailable
        The shipped jar is missing or does not match the shipped source.
    """
    conf = dict(conf or {})
    jar = str(check_jar())
    extensions = [e for e in conf.get("spark.sql.extensions", "").split(",") if e.strip()]
    classpath = [p for p in conf.get("spark.driver.extraClassPath", "").split(os.pathsep) if p]
    conf["spark.sql.extensions"] = ",".join(dict.fromkeys([*extensions, CLASS_NAME]))
    conf["spark.driver.extraClassPath"] = os.pathsep.join(dict.fromkeys([*classpath, jar]))
    return conf


def aggregates_conf(conf: dict[str, str] | None = None) -> dict[str, str]:
    """``conf`` plus the JVM path's jar (:data:`AGGREGATES_JAR`) on the driver's and the
    executors' class path, when it was built from the shipped source; else ``conf``
    unchanged (the JVM path then says why, once, and statements run on the Python path:
    :mod:`sparkseq.spark.jvm_path`). Like :func:`extension_conf`, it must be given before the JVM starts."""
    conf = dict(conf or {})
    try:
        jar = str(check_jar(AGGREGATES_JAR, AGGREGATES_SOURCES))
    except JvmParserUnavailable:
        return conf
    for key in ("spark.driver.extraClassPath", "spark.executor.extraClassPath"):
        paths = [p for p in conf.get(key, "").split(os.pathsep) if p]
        conf[key] = os.pathsep.join(dict.fromkeys([*paths, jar]))
    return conf


def main(argv: list[str] | None = None) -> int:
    """``--build`` writes the jar; ``--check`` says whether it matches the source (exit 1 if not)."""
    parser = argparse.ArgumentParser(prog="python -m sparkseq.spark.jars",
                                     description="Build or check sparkseq's Spark parser extension jar.")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--build", action="store_true",
                        help=f"compile {SOURCE.name}, {AGGREGATES_SOURCE.name} and {LIVE_SOURCE.name} (needs a JDK) "
                             f"into {JAR.name} "
                             f"and {AGGREGATES_JAR.name}")
    action.add_argument("--check", action="store_true", help="check that each jar was built from its source")
    args = parser.parse_args(argv)
    try:
        if args.build:
            build()
            build_aggregates()
        check_jar()
        check_jar(AGGREGATES_JAR, AGGREGATES_SOURCES)
    except JvmParserUnavailable as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    for jar, names in ((JAR, SOURCE.name), (AGGREGATES_JAR, " + ".join(s.name for s in AGGREGATES_SOURCES))):
        info = build_info(jar)
        print(f"{jar}: built from {names} (sha256 {info['source_sha256'][:12]}...) by javac {info['javac']} "
              f"--release {info['release']} against pyspark {info['pyspark']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
