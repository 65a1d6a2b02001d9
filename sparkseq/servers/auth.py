"""Authentication and encryption for sparkseq's servers (Thrift/JDBC and Spark Connect).

The default stays as it was: listen on loopback only, without authentication. Any
other address needs authentication, or ``--no-auth`` said explicitly
(:func:`preflight`, before Spark starts).

* **Thrift server** (:mod:`sparkseq.servers.thrift`), HiveServer2's SASL PLAIN login, checked by

  - an LDAP server (``--auth ldap --ldap-url URL --ldap-user-dn-pattern
    'uid=%s,ou=people,dc=example,dc=org'``): HiveServer2's own LDAP provider binds as the
    user with the password given;
  - a password file (``--auth password-file --password-file FILE``): lines
    ``user:pbkdf2-sha256$iterations$salt$hash`` that ``python -m sparkseq passwd FILE
    USER`` writes (never a plaintext password), checked by
    ``sparkseq/jvm/SparkSeqServerSecurity.java`` (HiveServer2's CUSTOM provider) and
    read again at every login.

  TLS (``--tls-keystore FILE --tls-keystore-password-file FILE``) is HiveServer2's own
  (``hive.server2.use.SSL``).
* **Spark Connect server** (:mod:`sparkseq.servers.connect`): Spark's pre-shared token
  (``--token-file FILE``, or ``$SPARK_CONNECT_AUTHENTICATE_TOKEN``), which clients send
  as a bearer token (``sc://host:port/;use_ssl=true;token=...``). Spark Connect has no
  TLS of its own: with a keystore, the Connect plugin listens on a free loopback port
  and a TLS relay in the driver JVM (``SparkSeqServerSecurity.TlsTunnel``, ALPN ``h2``)
  serves the address asked for.

Facts this rests on (pyspark 4.3, checked by ``tests/servers/test_server_security.py``):
HiveServer2 takes ``hive.server2.authentication``, ``hive.server2.use.SSL`` and the
keystore from the Hadoop configuration of the SparkContext (the HiveConf
``startWithContext`` builds), but its LDAP and CUSTOM providers build a fresh
``HiveConf()`` at every login, which sees Java system properties, not that
configuration: their settings are set as system properties of the driver JVM (none is
secret). Spark settings given to a SparkSession builder before the JVM starts end up
on the JVM's command line, which other users of the machine can read (``ps``): no
secret goes there — the keystore password goes through py4j, the Connect token through
the environment of the JVM about to start (Spark reads
``SPARK_CONNECT_AUTHENTICATE_TOKEN``). PySpark's Connect client sends a token only
over TLS (``use_ssl=true``, or implied by ``token=``) or, without TLS, to the host name
``localhost`` (gRPC's local credentials); a token over ``sc://127.0.0.1`` needs TLS.
"""

from __future__ import annotations

import argparse
import base64
import getpass
import hashlib
import hmac
import os
import re
import secrets
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sparkseq.servers.lifecycle import S, ServerError, fail, is_loopback, run
from sparkseq.spark import jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ServerKind = Literal["thrift", "connect"]

#: The Java source of the server classes and the jar built from it (shipped compiled).
JAVA_SOURCE = Path(__file__).resolve().parents[1] / "jvm" / "SparkSeqServerSecurity.java"
JAR = JAVA_SOURCE.with_name("sparkseq-server.jar")
PASSWORD_FILE_CLASS = "sparkseq.jvm.SparkSeqServerSecurity$PasswordFile"
CLASS_NAME = "sparkseq.jvm.SparkSeqServerSecurity"
TUNNEL_CLASS = "SparkSeqServerSecurity$TlsTunnel"
#: Must equal ``SparkSeqServerSecurity.PasswordFile.FILE_PROPERTY``.
PASSWORD_FILE_PROPERTY = "sparkseq.thrift.passwordFile"
#: Must equal ``SparkSeqServerSecurity.PasswordFile.SCHEME``.
PASSWORD_SCHEME = "pbkdf2-sha256"
#: OWASP's figure for PBKDF2-HMAC-SHA256 (2023); each login costs a few tenths of a second.
PASSWORD_ITERATIONS = 600_000
#: Spark Connect reads its token from this variable of the driver's environment (and its
#: Python client from the client's).
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
#: A token travels in ``sc://...;token=...``: characters that need no escaping there.
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~+/-]{16,}")
USER_PATTERN = re.compile(r"[^:\s#][^:\s]*")

#: HiveServer2 settings read from the server's HiveConf (the SparkContext's Hadoop configuration).
HIVE_AUTHENTICATION = "hive.server2.authentication"
HIVE_USE_SSL = "hive.server2.use.SSL"
HIVE_KEYSTORE_PATH = "hive.server2.keystore.path"
HIVE_KEYSTORE_PASSWORD = "hive.server2.keystore.password"
#: Settings HiveServer2's providers read at each login from a fresh HiveConf: system properties.
HIVE_LDAP_URL = "hive.server2.authentication.ldap.url"
HIVE_LDAP_BASE_DN = "hive.server2.authentication.ldap.baseDN"
HIVE_LDAP_USER_DN_PATTERN = "hive.server2.authentication.ldap.userDNPattern"
HIVE_CUSTOM_CLASS = "hive.server2.custom.authentication.class"


class ServerSecurityError(ServerError):
    """Authentication or TLS settings that cannot work (the message says why and what to give)."""


@dataclass(frozen=True)
class Ldap:
    """Thrift logins checked by binding to an LDAP server as the user.

    ``user_dn_pattern``: the user's DN with ``%s`` for the login name (several separated
    by ``:``, tried in turn), e.g. ``uid=%s,ou=people,dc=example,dc=org``; or
    ``base_dn``, meaning ``uid=%s,<base_dn>``.
    """

    url: str
    user_dn_pattern: str | None = None
    base_dn: str | None = None

    def __post_init__(self) -> None:
        if not re.match(r"ldaps?://[^\s]+$", self.url):
            raise ServerSecurityError(f"--ldap-url must be ldap://host:port or ldaps://host:port, got {self.url!r}")
        if (self.user_dn_pattern is None) == (self.base_dn is None):
            raise ServerSecurityError("LDAP authentication needs exactly one of --ldap-user-dn-pattern "
                                      "(e.g. 'uid=%s,ou=people,dc=example,dc=org') and --ldap-base-dn")
        for pattern in (self.user_dn_pattern or "").split(":") if self.user_dn_pattern else []:
            if "%s" not in pattern or "," not in pattern or "=" not in pattern:
                raise ServerSecurityError(f"--ldap-user-dn-pattern {pattern!r} is not a DN with %s for the user "
                                          "name, e.g. 'uid=%s,ou=people,dc=example,dc=org'")

    def describe(self) -> str:
        who = self.user_dn_pattern or f"uid=%s,{self.base_dn}"
        return f"LDAP {self.url} ({who})"


@dataclass(frozen=True)
class PasswordFile:
    """Thrift logins checked against a file written by ``python -m sparkseq passwd``."""

    path: Path

    def describe(self) -> str:
        return f"password file {self.path}"


@dataclass(frozen=True)
class Token:
    """Spark Connect's pre-shared bearer token."""

    value: str = field(repr=False)
    source: str = ""

    def __post_init__(self) -> None:
        if not TOKEN_PATTERN.fullmatch(self.value):
            raise ServerSecurityError(f"the token {self.source} must be at least 16 characters of letters, digits "
                                      "and ._~+/- (it travels in sc://...;token=...); make one with: python -c "
                                      "'import secrets; print(secrets.token_urlsafe(32))' > token.txt")

    def describe(self) -> str:
        return f"token ({self.source})" if self.source else "token"


@dataclass(frozen=True)
class Tls:
    """TLS with the key of a Java keystore (PKCS12, as ``keytool`` makes by default, or JKS;
    one password for the store and the key)."""

    keystore: Path
    password: str = field(repr=False)


Auth = Ldap | PasswordFile | Token


@dataclass(frozen=True)
class Security:
    """How a server authenticates its clients and whether it speaks TLS.

    ``auth`` None means no authentication, which only loopback addresses get unless
    ``no_auth`` says so explicitly (:data:`NO_AUTH`).
    """

    auth: Auth | None = None
    tls: Tls | None = None
    no_auth: bool = False

    def describe(self) -> str:
        """For a server's banner, e.g. ``LDAP ldap://... (uid=%s,...), TLS``."""
        auth = self.auth.describe() if self.auth is not None else "no authentication"
        return f"{auth}, TLS" if self.tls is not None else f"{auth}, no TLS"


#: No authentication, also on non-loopback addresses (``--no-auth``).
NO_AUTH = Security(no_auth=True)


def preflight(host: str, security: Security | None, server: ServerKind, *, warn: bool = True) -> None:
    """Refuse to serve ``host`` without authentication unless said explicitly; with
    ``warn``, warn on stderr about settings that expose credentials. Cheap: no Spark.

    Raises
    ------
    ServerSecurityError
        A non-loopback ``host`` without authentication and without ``no_auth``; a token
        for the Thrift server, a password method for Spark Connect; files that are missing.
    """
    security = security or Security()
    auth = security.auth
    if server == "thrift" and isinstance(auth, Token):
        raise ServerSecurityError("the Thrift server takes --auth ldap or --auth password-file, not a token "
                                  "(token authentication is Spark Connect's)")
    if server == "connect" and isinstance(auth, (Ldap, PasswordFile)):
        raise ServerSecurityError("the Spark Connect server authenticates with a token (--token-file); LDAP and "
                                  "password files are the Thrift server's")
    if isinstance(auth, PasswordFile) and not auth.path.is_file():
        raise ServerSecurityError(f"no password file {auth.path}; create it with: python -m sparkseq passwd "
                                  f"{auth.path} USER")
    if security.tls is not None and not security.tls.keystore.is_file():
        raise ServerSecurityError(f"no keystore file {security.tls.keystore} (make one with keytool -genkeypair)")
    if needs_jar(security, server):
        check_jar()
    if is_loopback(host):
        return
    if auth is None and not security.no_auth:
        how = ("--auth ldap or --auth password-file" if server == "thrift" else "--token-file FILE")
        raise ServerSecurityError(f"refusing to listen on {host} without authentication: anyone who can reach it "
                                  f"could run SQL (and read files) as this user. Give {how} (and --tls-keystore), "
                                  "or --no-auth to serve without authentication anyway")
    if not warn:
        return
    if auth is None:
        print(f"warning: listening on {host} without authentication (--no-auth): anyone who can reach it can run "
              "SQL (and read files) as this user", file=sys.stderr)
    elif security.tls is None:
        secret = "passwords" if server == "thrift" else "the token"
        print(f"warning: listening on {host} without TLS: {secret} and results travel in clear text "
              "(give --tls-keystore)", file=sys.stderr)


# --- the command line ----------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser, server: ServerKind) -> None:
    """Declare a server command's authentication and TLS options."""
    group = parser.add_argument_group("authentication and encryption (docs: bi.md / connect.md, 'Security')")
    if server == "thrift":
        group.add_argument("--auth", choices=("ldap", "password-file"),
                           help="check each JDBC/ODBC login: against an LDAP server (--ldap-url and "
                                "--ldap-user-dn-pattern or --ldap-base-dn), or a password file (--password-file)")
        group.add_argument("--ldap-url", metavar="URL", help="ldap://host:port or ldaps://host:port")
        group.add_argument("--ldap-user-dn-pattern", metavar="PATTERN",
                           help="the user's DN with %%s for the login name, e.g. 'uid=%%s,ou=people,dc=example,"
                                "dc=org' (several: separated by ':')")
        group.add_argument("--ldap-base-dn", metavar="DN", help="short for --ldap-user-dn-pattern 'uid=%%s,DN'")
        group.add_argument("--password-file", type=Path, metavar="FILE",
                           help="users and salted password hashes, written by: python -m sparkseq passwd FILE USER")
    else:
        group.add_argument("--token-file", type=Path, metavar="FILE",
                           help="clients must send the token in FILE's first line (sc://host:port/;use_ssl=true;"
                                f"token=...); default: ${TOKEN_ENV} when set")
    group.add_argument("--tls-keystore", type=Path, metavar="FILE",
                       help="serve TLS with the key in this Java keystore (PKCS12 or JKS, e.g. made by keytool "
                            "-genkeypair)")
    group.add_argument("--tls-keystore-password-file", type=Path, metavar="FILE",
                       help="the keystore's password, in this file's first line (never on the command line)")
    group.add_argument("--no-auth", action="store_true",
                       help="serve without authentication also on an address other than loopback (anyone who can "
                            "reach it can run SQL as this user)")


def run_server(args: argparse.Namespace, server: ServerKind, *, session: Callable[[Security], SparkSession],
               start: Callable[[SparkSession, Security], S], announce: Callable[[S], None]) -> int:
    """A server command's run (:func:`sparkseq.servers.lifecycle.run`) with its authentication
    and TLS options read and checked first: exit code 2, before Spark starts, for options that
    cannot work."""
    try:
        security = from_args(args, server)
        preflight(args.host, security, server)
    except ServerError as exc:
        return fail(exc, 2)
    return run(args, session=lambda: session(security), start=lambda spark: start(spark, security),
               announce=announce)


def from_args(args: argparse.Namespace, server: ServerKind) -> Security:
    """The :class:`Security` the options ask for, files read; cheap, no Spark.

    Raises
    ------
    ServerSecurityError
        Options that do not fit together, or files that cannot be read.
    """
    auth: Auth | None = None
    if server == "thrift":
        auth = _thrift_auth(args)
    elif args.token_file is not None:
        auth = Token(_first_line(args.token_file, "--token-file"), f"from {args.token_file}")
    elif os.environ.get(TOKEN_ENV):
        if args.no_auth:
            raise ServerSecurityError(f"--no-auth, but ${TOKEN_ENV} is set and Spark Connect would require that "
                                      "token anyway: unset it, or leave out --no-auth")
        auth = Token(os.environ[TOKEN_ENV], f"from ${TOKEN_ENV}")
    if args.no_auth and auth is not None:
        raise ServerSecurityError("--no-auth contradicts the authentication options given")
    tls = None
    if args.tls_keystore is not None:
        if args.tls_keystore_password_file is None:
            raise ServerSecurityError("--tls-keystore needs --tls-keystore-password-file (the password is never "
                                      "given on the command line)")
        tls = Tls(args.tls_keystore, _first_line(args.tls_keystore_password_file, "--tls-keystore-password-file"))
    elif args.tls_keystore_password_file is not None:
        raise ServerSecurityError("--tls-keystore-password-file without --tls-keystore")
    return Security(auth, tls, args.no_auth)


def _thrift_auth(args: argparse.Namespace) -> Auth | None:
    ldap_options = [args.ldap_url, args.ldap_user_dn_pattern, args.ldap_base_dn]
    if args.auth != "ldap" and any(option is not None for option in ldap_options):
        raise ServerSecurityError("--ldap-url, --ldap-user-dn-pattern and --ldap-base-dn go with --auth ldap")
    if args.auth != "password-file" and args.password_file is not None:
        raise ServerSecurityError("--password-file goes with --auth password-file")
    if args.auth == "ldap":
        if args.ldap_url is None:
            raise ServerSecurityError("--auth ldap needs --ldap-url (ldap://host:port)")
        return Ldap(args.ldap_url, args.ldap_user_dn_pattern, args.ldap_base_dn)
    if args.auth == "password-file":
        if args.password_file is None:
            raise ServerSecurityError("--auth password-file needs --password-file FILE (python -m sparkseq passwd "
                                      "FILE USER creates it)")
        return PasswordFile(args.password_file)
    return None


def _first_line(path: Path, option: str) -> str:
    """The first line of ``path`` without its line break; refuses an empty one."""
    try:
        with path.open(encoding="utf-8") as file:
            line = file.readline().rstrip("\r\n")
    except OSError as exc:
        raise ServerSecurityError(f"{option} {path}: {exc.strerror}") from None
    if not line:
        raise ServerSecurityError(f"{option} {path}: the first line is empty")
    return line


# --- password files ------------------------------------------------------------------------


def hash_password(password: str, *, iterations: int = PASSWORD_ITERATIONS, salt: bytes | None = None) -> str:
    """``pbkdf2-sha256$iterations$salt$hash`` (base64) for ``password``, with a random salt."""
    salt = secrets.token_bytes(16) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations)
    return f"{PASSWORD_SCHEME}${iterations}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def verify_password(stored: str, password: str) -> bool:
    """True when ``password`` hashes to ``stored`` (what the server's Java check does too)."""
    scheme, iterations, salt, digest = stored.split("$")
    if scheme != PASSWORD_SCHEME:
        raise ValueError(f"not a {PASSWORD_SCHEME} hash: {scheme}")
    actual = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), base64.b64decode(salt), int(iterations))
    return hmac.compare_digest(actual, base64.b64decode(digest))


def read_users(path: Path) -> dict[str, str]:
    """User name -> stored hash of a password file (comments and blank lines skipped)."""
    users: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#") and ":" in line:
            user, stored = line.split(":", 1)
            users.setdefault(user, stored.strip())  # the server takes the first line of a user
    return users


def set_user(path: Path, user: str, password: str | None) -> None:
    """Add ``user`` to the password file at ``path`` (created, mode 0600) or change their
    password; ``password`` None removes them. The file is replaced at once (no half-written
    file for a login to read)."""
    if not USER_PATTERN.fullmatch(user):
        raise ServerSecurityError(f"user name {user!r}: no ':', no spaces, not starting with '#'")
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    kept = [line for line in lines if not line.startswith(f"{user}:")]
    if password is None and len(kept) == len(lines):
        raise ServerSecurityError(f"no user {user!r} in {path}")
    if password is not None:
        if not password:
            raise ServerSecurityError("the password is empty")
        kept.append(f"{user}:{hash_password(password)}")
    folder = path.resolve().parent
    descriptor, partial = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)  # mode 0600
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write("".join(f"{line}\n" for line in kept))
        os.replace(partial, path)
    except BaseException:
        os.unlink(partial)
        raise


def passwd_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``python -m sparkseq passwd``'s options."""
    parser.add_argument("file", type=Path, help="the password file (created when missing, mode 0600)")
    parser.add_argument("user", help="the login name")
    parser.add_argument("--delete", action="store_true", help="remove the user instead")


def passwd_main(args: argparse.Namespace) -> int:
    """Add a user, change a password or remove a user; the password is asked for twice in a
    terminal, else read from the first line of standard input (never an argument)."""
    try:
        password = None if args.delete else _read_new_password()
        set_user(args.file, args.user, password)
    except ServerSecurityError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"cannot write {args.file}: {exc.strerror}", file=sys.stderr)
        return 1
    what = "removed from" if args.delete else "set in"
    print(f"user {args.user} {what} {args.file}", file=sys.stderr)
    return 0


def _read_new_password() -> str:
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass("password: ")
    if getpass.getpass("again: ") != first:
        raise ServerSecurityError("the passwords differ")
    return first


# --- in the driver JVM ---------------------------------------------------------------------


def jvm_conf(conf: dict[str, str] | None = None) -> dict[str, str]:
    """Spark settings that put the server classes (password files, the TLS relay) on the
    driver's class path, merged into ``conf``; give them before the JVM starts
    (``sparkseq.session(conf=...)``)."""
    conf = dict(conf or {})
    jar = str(check_jar())
    classpath = [p for p in conf.get("spark.driver.extraClassPath", "").split(os.pathsep) if p]
    conf["spark.driver.extraClassPath"] = os.pathsep.join(dict.fromkeys([*classpath, jar]))
    return conf


def needs_jar(security: Security | None, server: ServerKind) -> bool:
    """Whether ``server`` serving with ``security`` needs :data:`JAR` in the driver JVM: for
    a password file (Thrift) or TLS (Spark Connect's relay)."""
    if security is None:
        return False
    return isinstance(security.auth, PasswordFile) if server == "thrift" else security.tls is not None


def check_jar(jar: Path = JAR) -> Path:
    """``jar`` when it was built from the shipped source; :class:`ServerSecurityError` otherwise."""
    try:
        recorded = jars.build_info(jar).get("source_sha256")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ServerSecurityError(f"sparkseq's server classes {jar} cannot be read ({exc}); reinstall sparkseq, "
                                  "or rebuild them: python -m sparkseq.servers.auth --build (needs a JDK)") from None
    if recorded != jars.source_digest(JAVA_SOURCE):
        raise ServerSecurityError(f"{jar.name} was built from another version of {JAVA_SOURCE.name}; rebuild it: "
                                  "python -m sparkseq.servers.auth --build (needs a JDK)")
    return jar


def build(jar: Path = JAR) -> Path:
    """Compile :data:`JAVA_SOURCE` into ``jar`` (``javac --release 17`` against pyspark's jars)."""

    return jars.compile_jar((JAVA_SOURCE,), jar, {"source_sha256": jars.source_digest(JAVA_SOURCE)})


def _jvm(spark: Any) -> Any:
    from sparkseq.spark.gateway import jvm

    return jvm(spark)


def _has_class(spark: Any, name: str) -> bool:
    from py4j.protocol import Py4JError

    try:
        _jvm(spark).java.lang.Class.forName(name)
        return True
    except Py4JError:
        return False


def _require_jar_classes(spark: Any, what: str) -> None:
    check_jar()
    if not _has_class(spark, CLASS_NAME):
        raise ServerSecurityError(f"{what} needs sparkseq's server classes in the driver JVM, which was started "
                                  "without them: build the session with sparkseq.session(conf=sparkseq.servers.auth."
                                  "jvm_conf()) (the class path is fixed when the JVM starts)")


def check_keystore(spark: Any, tls: Tls) -> None:
    """Open the keystore in the driver JVM as the server will; a clear error if that fails."""
    from py4j.protocol import Py4JJavaError

    view = _jvm(spark)
    secret = spark.sparkContext._gateway.new_array(view.char, len(tls.password))
    for i, char in enumerate(tls.password):
        secret[i] = char
    try:
        store = view.java.security.KeyStore.getInstance(view.java.io.File(str(tls.keystore)), secret)
    except Py4JJavaError as exc:
        raise ServerSecurityError(f"cannot open the keystore {tls.keystore}: wrong password, or not a PKCS12 or "
                                  f"JKS keystore ({exc.java_exception.getMessage()})") from None
    if not any(store.isKeyEntry(alias) for alias in view.java.util.Collections.list(store.aliases())):
        raise ServerSecurityError(f"the keystore {tls.keystore} holds no private key (make one with keytool "
                                  "-genkeypair)")


def configure_thrift(spark: Any, security: Security | None) -> None:
    """HiveServer2's authentication and TLS settings for the Thrift server about to start in
    ``spark``'s JVM (see the module docstring for where each goes)."""
    security = security or Security()
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    system = _jvm(spark).java.lang.System
    auth = security.auth
    for key in (HIVE_LDAP_URL, HIVE_LDAP_BASE_DN, HIVE_LDAP_USER_DN_PATTERN, HIVE_CUSTOM_CLASS,
                PASSWORD_FILE_PROPERTY):
        system.clearProperty(key)
    if auth is None:
        hadoop.set(HIVE_AUTHENTICATION, "NONE")
    elif isinstance(auth, Ldap):
        hadoop.set(HIVE_AUTHENTICATION, "LDAP")
        system.setProperty(HIVE_LDAP_URL, auth.url)
        if auth.user_dn_pattern is not None:
            system.setProperty(HIVE_LDAP_USER_DN_PATTERN, auth.user_dn_pattern)
        else:
            system.setProperty(HIVE_LDAP_BASE_DN, str(auth.base_dn))
    elif isinstance(auth, PasswordFile):
        _require_jar_classes(spark, "--auth password-file")
        hadoop.set(HIVE_AUTHENTICATION, "CUSTOM")
        system.setProperty(HIVE_CUSTOM_CLASS, PASSWORD_FILE_CLASS)
        system.setProperty(PASSWORD_FILE_PROPERTY, str(auth.path.resolve()))
    else:
        raise ServerSecurityError("the Thrift server takes LDAP or a password file, not a token")
    if security.tls is None:
        hadoop.set(HIVE_USE_SSL, "false")
        return
    check_keystore(spark, security.tls)
    hadoop.set(HIVE_USE_SSL, "true")
    hadoop.set(HIVE_KEYSTORE_PATH, str(security.tls.keystore.resolve()))
    hadoop.set(HIVE_KEYSTORE_PASSWORD, security.tls.password)


def forget_thrift_secrets(spark: Any) -> None:
    """Drop the keystore password from the Hadoop configuration once HiveServer2 has read it."""
    spark.sparkContext._jsc.hadoopConfiguration().unset(HIVE_KEYSTORE_PASSWORD)


def connect_environment(security: Security | None) -> None:
    """Put the token where Spark's Connect plugin reads it: the environment of the JVM about
    to start (a Spark setting would show on the JVM's command line)."""
    if security is not None and isinstance(security.auth, Token):
        os.environ[TOKEN_ENV] = security.auth.value


def start_tunnel(spark: Any, host: str, port: int, tls: Tls, target_port: int) -> Any:
    """The TLS relay on ``host:port`` to the Connect plugin on ``127.0.0.1:target_port``
    (a ``SparkSeqServerSecurity.TlsTunnel``; ``close()`` it)."""
    from py4j.protocol import Py4JJavaError

    _require_jar_classes(spark, "TLS for Spark Connect")
    check_keystore(spark, tls)
    tunnel = getattr(_jvm(spark).sparkseq.jvm, TUNNEL_CLASS)
    try:
        return tunnel(host, port, str(tls.keystore.resolve()), tls.password, "127.0.0.1", target_port)
    except Py4JJavaError as exc:
        raise ServerSecurityError(f"cannot serve TLS on {host}:{port}: {exc.java_exception.getMessage()}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sparkseq.servers.auth --build``: rebuild :data:`JAR` after editing the Java source."""
    parser = argparse.ArgumentParser(prog="python -m sparkseq.servers.auth", description=main.__doc__)
    parser.add_argument("--build", action="store_true", help="compile the Java source into the jar (needs a JDK)")
    args = parser.parse_args(argv)
    if args.build:
        print(build())
    else:
        print(check_jar())
    return 0


__all__ = ["JAR", "NO_AUTH", "Ldap", "PasswordFile", "Security", "ServerSecurityError", "Tls", "Token",
           "add_arguments", "build", "check_jar", "check_keystore", "configure_thrift", "connect_environment",
           "forget_thrift_secrets", "from_args", "hash_password", "jvm_conf", "needs_jar", "passwd_arguments",
           "passwd_main", "preflight", "read_users", "run_server", "set_user", "start_tunnel", "verify_password"]

if __name__ == "__main__":
    raise SystemExit(main())
