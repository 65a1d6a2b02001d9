"""Authentication and TLS of both servers, with real servers and real clients on loopback.

One OpenLDAP server (``slapd`` from the OS packages, started here with a temporary
configuration on a free loopback port) and a keystore made by ``keytool`` serve the
module. Three servers start once, side by side, as ``python -m sparkseq ...`` in
subprocesses: a Thrift server checking logins against the LDAP server with TLS, a
Thrift server checking them against a password file written by ``python -m sparkseq
passwd``, and a Spark Connect server with a token and TLS. Clients: impyla (DB-API)
and beeline (the Hive JDBC driver) for Thrift, PySpark's Connect client
(:mod:`tests.servers.security_clients`) for Connect.

Every client runs ``INSERT OVERWRITE DIRECTORY '<out>/<case>'``: a statement whose
effect is a directory on disk, so "refused, and nothing run" is read off the folder —
only the accepted clients' directories exist.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from sparkseq.commands import cli
from sparkseq.servers import auth as server_auth
from sparkseq.servers import thrift
from tests.conftest import SUBPROCESS_JVM_OPTIONS
from tests.servers.test_thrift_server import JARS, PROMPT, free_port, read_banner

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 480  # three Spark drivers start side by side on a loaded 2-core machine
SUFFIX = "dc=sparkseq,dc=test"
USER_DN_PATTERN = f"uid=%s,ou=people,{SUFFIX}"
ALICE = "alice-ldap-secret"  # in the LDAP server
ZOE = "zoë-ldap-secret"  # in the LDAP server too: not ASCII
BOB = "bob-file-s3cret ü"  # in the password file (not ASCII: Python hashes, Java checks)
KEYSTORE_PASSWORD = "keystore-secret"


def java_tool(name: str) -> str:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / name) if home else shutil.which(name)
    assert found and os.access(found, os.X_OK), f"{name} not found (it comes with Java 17+)"
    return found


def wait_port(port: int, process: subprocess.Popen[bytes] | None = None, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert process is None or process.poll() is None, f"exited with {process.returncode}"
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


@dataclass
class Keys:
    keystore: Path
    password_file: Path
    cert: Path  # PEM, for impyla and gRPC
    truststore: Path  # PKCS12 with the certificate, for JDBC


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    """A self-signed key for 127.0.0.1 in a PKCS12 keystore, as a user makes one with keytool."""
    folder = tmp_path_factory.mktemp("keys")
    password = folder / "keystore.pass"
    password.write_text(KEYSTORE_PASSWORD + "\n")
    keys = Keys(folder / "server.p12", password, folder / "server.pem", folder / "trust.p12")
    keytool = java_tool("keytool")
    common = ["-storepass:file", str(password), "-alias", "sparkseq"]
    for args in (["-genkeypair", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2", "-dname",
                  "CN=127.0.0.1", "-ext", "san=ip:127.0.0.1,dns:localhost", "-keystore", str(keys.keystore),
                  "-storetype", "PKCS12"],
                 ["-exportcert", "-rfc", "-keystore", str(keys.keystore), "-file", str(keys.cert)],
                 ["-importcert", "-noprompt", "-file", str(keys.cert), "-keystore", str(keys.truststore),
                  "-storetype", "PKCS12"]):
        done = subprocess.run([keytool, *(f"-J{option}" for option in SUBPROCESS_JVM_OPTIONS.split()), *args, *common],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
    return keys


def ssha(password: str) -> str:
    """An LDAP ``{SSHA}`` userPassword (of the UTF-8 bytes), as slappasswd writes it."""
    salt = secrets.token_bytes(8)
    return "{SSHA}" + base64.b64encode(hashlib.sha1(password.encode() + salt).digest() + salt).decode()


@pytest.fixture(scope="module")
def ldap_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """OpenLDAP's slapd with one user, uid=alice, on a free loopback port."""
    slapd = shutil.which("slapd") or "/usr/sbin/slapd"
    slapadd = shutil.which("slapadd") or "/usr/sbin/slapadd"
    assert os.access(slapd, os.X_OK), "slapd not found: apt-get install slapd (.ci/bootstrap.sh does)"
    schemas = next(p for p in (Path("/etc/ldap/schema"), Path("/etc/openldap/schema")) if p.is_dir())
    modules = [p for p in (Path("/usr/lib/ldap"), Path("/usr/lib64/openldap"), Path("/usr/lib/openldap"))
               if (p / "back_mdb.so").exists()]
    folder = tmp_path_factory.mktemp("ldap")
    (folder / "db").mkdir()
    conf = folder / "slapd.conf"
    conf.write_text("".join(f"include {schemas}/{name}.schema\n" for name in ("core", "cosine", "inetorgperson"))
                    + (f"modulepath {modules[0]}\nmoduleload back_mdb\n" if modules else "")
                    + f"pidfile {folder}/slapd.pid\ndatabase mdb\nmaxsize 10485760\nsuffix \"{SUFFIX}\"\n"
                    + f"rootdn \"cn=admin,{SUFFIX}\"\ndirectory {folder}/db\n")
    (folder / "users.ldif").write_text(
        f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: sparkseq\ndc: sparkseq\n\n"
        f"dn: ou=people,{SUFFIX}\nobjectClass: organizationalUnit\nou: people\n\n"
        f"dn: uid=alice,ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\nuid: alice\ncn: Alice\nsn: A\n"
        f"userPassword: {ssha(ALICE)}\n\n"
        f"dn: uid=zoe,ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\nuid: zoe\ncn: Zoe\nsn: Z\n"
        f"userPassword: {ssha(ZOE)}\n")
    done = subprocess.run([slapadd, "-f", str(conf), "-l", str(folder / "users.ldif")], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    port = free_port()
    with (folder / "slapd.log").open("w+") as log:
        process = subprocess.Popen([slapd, "-f", str(conf), "-h", f"ldap://127.0.0.1:{port}/", "-d", "0"],
                                   stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_port(port, process)  # type: ignore[arg-type]
            yield f"ldap://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(timeout=30)


@dataclass
class Server:
    process: subprocess.Popen[str]
    port: int
    stderr: IO[str]
    banner: str = ""


@dataclass
class Servers:
    ldap: Server  # Thrift, LDAP and TLS
    file: Server  # Thrift, a password file, no TLS
    connect: Server  # Spark Connect, a token and TLS
    password_file: Path
    token: str


def sparkseq(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sparkseq", *args], input=stdin, capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def servers(keys: Keys, ldap_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    folder = tmp_path_factory.mktemp("servers")
    passwords = folder / "users.passwd"
    done = sparkseq("passwd", str(passwords), "bob", stdin=BOB + "\n")
    assert done.returncode == 0, done.stderr
    token = secrets.token_urlsafe(32)
    (folder / "token").write_text(token + "\n")
    env = {k: v for k, v in os.environ.items() if k != server_auth.TOKEN_ENV}
    tls = ["--tls-keystore", str(keys.keystore), "--tls-keystore-password-file", str(keys.password_file)]
    commands = {
        "ldap": ["thriftserver", "--auth", "ldap", "--ldap-url", ldap_url, "--ldap-user-dn-pattern",
                 USER_DN_PATTERN, *tls],
        "file": ["thriftserver", "--auth", "password-file", "--password-file", str(passwords)],
        "connect": ["connect-server", "--token-file", str(folder / "token"), *tls],
    }
    started: dict[str, Server] = {}
    try:
        for name, args in commands.items():
            port = free_port()
            stderr = (folder / f"{name}.err").open("w+")
            process = subprocess.Popen([sys.executable, "-m", "sparkseq", *args, "--port", str(port),
                                        "--in-memory-catalog"], cwd=ROOT,
                                       env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
            started[name] = Server(process, port, stderr)
        for server in started.values():
            server.banner = read_banner(server.process, server.stderr, timeout=START_TIMEOUT_S)
        yield Servers(started["ldap"], started["file"], started["connect"], passwords, token)
    finally:
        for server in started.values():
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait()
            server.stderr.close()


def impyla(port: int, out: Path, name: str, **options: object) -> str:
    """Log in with impyla and run a statement that writes ``out/name``: ``ok as <user>`` or the error."""
    from impala.dbapi import connect

    try:
        connection = connect(host="127.0.0.1", port=port, auth_mechanism="PLAIN", timeout=120, **options)
        cursor = connection.cursor()
        cursor.execute(f"INSERT OVERWRITE DIRECTORY '{out / name}' USING csv SELECT 1 AS x")
        cursor.execute("SELECT current_user()")
        user = cursor.fetchall()[0][0]
        connection.close()
        return f"ok as {user}"
    except Exception as exc:  # noqa: BLE001 - the test asserts on the message
        return f"error: {type(exc).__name__}: {exc}"


def beeline(url: str, sql: str, *options: str) -> subprocess.CompletedProcess[str]:
    # a client JVM of a few seconds: C1 only, as the tests' other short JVMs (tests/conftest.py)
    command = [java_tool("java"), *SUBPROCESS_JVM_OPTIONS.split(), "-cp", str(JARS / "*"),
               "org.apache.hive.beeline.BeeLine", "-u", url, "--outputformat=csv2", "--silent=true",
               *options, "-e", sql]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)


def written(out: Path) -> list[str]:
    """The cases whose statement ran (their directory exists)."""
    return sorted(p.name for p in out.iterdir()) if out.exists() else []


LOGIN_REFUSED = "Error validating the login"


# --- the Thrift server: LDAP and TLS ----------------------------------------------------------


def test_thrift_ldap_with_tls_refuses_bad_logins_and_plaintext(servers: Servers, keys: Keys, ldap_url: str,
                                                               tmp_path: Path) -> None:
    server = servers.ldap
    assert f"JDBC URL   jdbc:hive2://127.0.0.1:{server.port}/default;ssl=true" in server.banner
    assert f"security   LDAP {ldap_url} ({USER_DN_PATTERN}), TLS" in server.banner
    tls = {"use_ssl": True, "ca_cert": str(keys.cert)}
    seen = {
        "good": impyla(server.port, tmp_path, "good", user="alice", password=ALICE, **tls),
        "wrong_password": impyla(server.port, tmp_path, "wrong_password", user="alice", password="guess", **tls),
        "no_password": impyla(server.port, tmp_path, "no_password", user="alice", password="", **tls),
        "unknown_user": impyla(server.port, tmp_path, "unknown_user", user="mallory", password=ALICE, **tls),
        "plaintext": impyla(server.port, tmp_path, "plaintext", user="alice", password=ALICE),
    }
    assert seen.pop("good") == "ok as alice"
    assert seen.pop("plaintext").startswith("error: TTransportException")  # no TLS handshake: dropped
    assert all(LOGIN_REFUSED in error for error in seen.values()), seen
    assert written(tmp_path) == ["good"]


def test_thrift_ldap_garbles_non_ascii_passwords(servers: Servers, keys: Keys, tmp_path: Path) -> None:
    """A limit of HiveServer2 (docs/bi.md section 8): its PLAIN server reads each byte of the
    login as a character, so a non-ASCII password reaches the LDAP provider garbled and the
    right one is refused. (The password-file check undoes it: see its test.)"""
    tls = {"use_ssl": True, "ca_cert": str(keys.cert)}
    assert LOGIN_REFUSED in impyla(servers.ldap.port, tmp_path, "zoe", user="zoe", password=ZOE, **tls)
    assert written(tmp_path) == []


def test_thrift_tls_with_jdbc(servers: Servers, keys: Keys, tmp_path: Path) -> None:
    server = servers.ldap
    (tmp_path / "alice").write_text(ALICE)  # beeline -w: the password from a file
    (tmp_path / "guess").write_text("guess")
    url = f"jdbc:hive2://127.0.0.1:{server.port}/default"
    trusted = f"{url};ssl=true;sslTrustStore={keys.truststore};trustStorePassword={KEYSTORE_PASSWORD}"
    out = tmp_path / "out"
    good = beeline(trusted, f"INSERT OVERWRITE DIRECTORY '{out}/good' USING csv SELECT 1 AS x;\n"
                            "SELECT current_user() AS who", "-n", "alice", "-w", str(tmp_path / "alice"))
    assert good.returncode == 0, good.stderr
    assert [PROMPT.sub("", line) for line in good.stdout.splitlines() if line.strip()][-2:] == ["who", "alice"]
    wrong = beeline(trusted, f"INSERT OVERWRITE DIRECTORY '{out}/wrong' USING csv SELECT 1 AS x", "-n", "alice",
                    "-w", str(tmp_path / "guess"))
    assert wrong.returncode != 0
    assert LOGIN_REFUSED in wrong.stderr
    plaintext = beeline(url, f"INSERT OVERWRITE DIRECTORY '{out}/plaintext' USING csv SELECT 1 AS x", "-n", "alice",
                        "-w", str(tmp_path / "alice"))
    assert plaintext.returncode != 0
    assert "Could not open client transport" in plaintext.stderr
    assert written(out) == ["good"]


# --- the Thrift server: a password file -------------------------------------------------------


def test_thrift_password_file_refuses_bad_logins_and_reads_the_file_at_each_login(servers: Servers,
                                                                                   tmp_path: Path) -> None:
    server = servers.file
    assert f"security   password file {servers.password_file}, no TLS" in server.banner
    port = server.port
    seen = {
        "good": impyla(port, tmp_path, "good", user="bob", password=BOB),
        "wrong_password": impyla(port, tmp_path, "wrong_password", user="bob", password=BOB[:-1]),
        "no_password": impyla(port, tmp_path, "no_password", user="bob", password=""),
        "unknown_user": impyla(port, tmp_path, "unknown_user", user="mallory", password=BOB),
        "hash_as_password": impyla(port, tmp_path, "hash_as_password", user="bob",
                                   password=server_auth.read_users(servers.password_file)["bob"]),
    }
    assert seen.pop("good") == "ok as bob"
    assert all(LOGIN_REFUSED in error for error in seen.values()), seen
    assert written(tmp_path) == ["good"]
    # users added and removed while the server runs
    assert sparkseq("passwd", str(servers.password_file), "carol", stdin="carol-pw\n").returncode == 0
    assert impyla(port, tmp_path, "carol", user="carol", password="carol-pw") == "ok as carol"
    assert sparkseq("passwd", str(servers.password_file), "carol", "--delete").returncode == 0
    assert LOGIN_REFUSED in impyla(port, tmp_path, "carol_removed", user="carol", password="carol-pw")
    assert written(tmp_path) == ["carol", "good"]


# --- the Spark Connect server: a token and TLS ------------------------------------------------


def test_connect_token_with_tls_refuses_wrong_and_missing_tokens_and_plaintext(servers: Servers, keys: Keys,
                                                                               tmp_path: Path) -> None:
    server = servers.connect
    url = f"sc://127.0.0.1:{server.port}"
    assert f"URL        {url}/;use_ssl=true" in server.banner
    relay = server.banner.split("relayed to the Connect plugin on 127.0.0.1:")[1].split()[0]
    backend = f"sc://localhost:{relay}"  # the plugin behind the relay: loopback, no TLS, still the token
    cases = {
        "good": f"{url}/;use_ssl=true;token={servers.token}",
        "token_implies_tls": f"{url}/;token={servers.token}",
        "wrong_token": f"{url}/;use_ssl=true;token={secrets.token_urlsafe(32)}",
        "no_token": f"{url}/;use_ssl=true",
        "plaintext": url,
        "plaintext_with_token": f"sc://localhost:{server.port}/;token={servers.token}",
        "backend": f"{backend}/;token={servers.token}",
        "backend_no_token": backend,
    }
    # gRPC's default trusted certificates, as a client trusting the server's certificate sets them
    env = {**{k: v for k, v in os.environ.items() if k != server_auth.TOKEN_ENV},
           "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(keys.cert)}
    done = subprocess.run([sys.executable, "-m", "tests.servers.security_clients", str(tmp_path)], cwd=ROOT, env=env,
                          input=json.dumps(list(cases.items())), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert {name: seen[name] for name in ("good", "token_implies_tls", "backend")} == dict.fromkeys(
        ("good", "token_implies_tls", "backend"), "ok")
    assert "UNAUTHENTICATED" in seen["wrong_token"] and "Invalid authentication token" in seen["wrong_token"]
    assert "No authentication token provided" in seen["no_token"]
    assert "No authentication token provided" in seen["backend_no_token"]
    assert "UNAVAILABLE" in seen["plaintext"]  # no TLS handshake: the relay drops it
    assert "UNAVAILABLE" in seen["plaintext_with_token"]
    assert written(tmp_path) == ["backend", "good", "token_implies_tls"]


def test_untrusting_connect_client_sends_nothing(servers: Servers, tmp_path: Path) -> None:
    """Without the server's certificate among its trusted ones the TLS handshake fails, and
    the token is never sent."""
    env = {k: v for k, v in os.environ.items() if k not in (server_auth.TOKEN_ENV, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH")}
    cases = [["untrusting", f"sc://127.0.0.1:{servers.connect.port}/;use_ssl=true;token={servers.token}"]]
    done = subprocess.run([sys.executable, "-m", "tests.servers.security_clients", str(tmp_path)], cwd=ROOT, env=env,
                          input=json.dumps(cases), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "CERTIFICATE_VERIFY_FAILED" in json.loads(done.stdout.strip().splitlines()[-1])["untrusting"]
    assert written(tmp_path) == []


# --- refused before Spark starts --------------------------------------------------------------


def test_non_loopback_without_auth_is_refused_before_spark_starts() -> None:
    started = time.monotonic()
    done = sparkseq("thriftserver", "--host", "0.0.0.0")
    assert done.returncode == 2
    assert ("ServerSecurityError: refusing to listen on 0.0.0.0 without authentication: anyone who can reach it "
            "could run SQL (and read files) as this user. Give --auth ldap or --auth password-file (and "
            "--tls-keystore), or --no-auth to serve without authentication anyway") in done.stderr
    assert time.monotonic() - started < 20  # no Spark session was started (that takes 10-20 s)


@pytest.mark.parametrize(("args", "message"), [
    (["connect-server", "--host", "0.0.0.0"], "refusing to listen on 0.0.0.0 without authentication"),
    (["connect-server", "--host", "0.0.0.0", "--no-auth", "--token-file", "{token}"],
     "--no-auth contradicts the authentication options given"),
    (["connect-server", "--token-file", "{short}"], "must be at least 16 characters"),
    (["connect-server", "--token-file", "{folder}/none"], "--token-file {folder}/none: No such file or directory"),
    (["thriftserver", "--auth", "ldap"], "--auth ldap needs --ldap-url"),
    (["thriftserver", "--auth", "ldap", "--ldap-url", "ldap://127.0.0.1:1"], "needs exactly one of"),
    (["thriftserver", "--auth", "ldap", "--ldap-url", "ldap://127.0.0.1:1", "--ldap-user-dn-pattern", "uid=x"],
     "is not a DN with %s"),
    (["thriftserver", "--auth", "password-file", "--password-file", "{folder}/none"], "no password file"),
    (["thriftserver", "--tls-keystore", "{token}"], "--tls-keystore needs --tls-keystore-password-file"),
    (["thriftserver", "--tls-keystore", "{folder}/none", "--tls-keystore-password-file", "{token}"],
     "no keystore file"),
], ids=["connect-no-auth", "contradiction", "short-token", "no-token-file", "ldap-no-url", "ldap-no-dn",
        "ldap-bad-pattern", "no-password-file", "keystore-no-password", "no-keystore"])
def test_settings_that_cannot_work_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                               message: str) -> None:
    (tmp_path / "token").write_text(secrets.token_urlsafe(32))
    (tmp_path / "short").write_text("abc")
    values = {"token": str(tmp_path / "token"), "short": str(tmp_path / "short"), "folder": str(tmp_path)}
    assert cli.main([arg.format(**values) for arg in args]) == 2
    assert message.format(**values) in capsys.readouterr().err


def test_connect_token_from_the_environment(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Spark reads $SPARK_CONNECT_AUTHENTICATE_TOKEN itself: the server counts it as authentication."""
    from sparkseq.servers import connect as connect_server

    token = secrets.token_urlsafe(32)
    monkeypatch.setenv(server_auth.TOKEN_ENV, token)
    parser = argparse.ArgumentParser()
    connect_server.add_arguments(parser)
    security = server_auth.from_args(parser.parse_args(["--host", "0.0.0.0"]), "connect")
    assert security.auth == server_auth.Token(token, f"from ${server_auth.TOKEN_ENV}")
    assert cli.main(["connect-server", "--no-auth"]) == 2
    assert f"--no-auth, but ${server_auth.TOKEN_ENV} is set" in capsys.readouterr().err


def test_connect_urls_say_how_to_reach_the_server() -> None:
    """PySpark sends a token without TLS only to ``localhost``: the banner's URL says so."""
    from sparkseq.servers.connect import ConnectServer

    token = server_auth.Token(secrets.token_urlsafe(32))
    tls = server_auth.Tls(Path("server.p12"), "-")
    urls = [ConnectServer(None, "127.0.0.1", 15002, None, security).url  # type: ignore[arg-type]
            for security in (server_auth.Security(), server_auth.Security(token),
                             server_auth.Security(token, tls), server_auth.Security(None, tls, no_auth=True))]
    assert urls == ["sc://127.0.0.1:15002", "sc://localhost:15002", "sc://127.0.0.1:15002/;use_ssl=true",
                    "sc://127.0.0.1:15002/;use_ssl=true"]


def test_no_auth_beyond_loopback_only_when_said(capsys: pytest.CaptureFixture[str]) -> None:
    server_auth.preflight("0.0.0.0", server_auth.NO_AUTH, "thrift")
    assert "warning: listening on 0.0.0.0 without authentication (--no-auth)" in capsys.readouterr().err
    ldap = server_auth.Security(server_auth.Ldap("ldap://127.0.0.1:1", base_dn=SUFFIX))
    server_auth.preflight("0.0.0.0", ldap, "thrift")
    assert "without TLS: passwords and results travel in clear text" in capsys.readouterr().err
    server_auth.preflight("127.0.0.1", None, "connect")  # the default: loopback, no authentication, no message
    assert capsys.readouterr().err == ""


def test_python_api_refuses_too(spark, keys: Keys) -> None:
    with pytest.raises(server_auth.ServerSecurityError, match="refusing to listen on 0.0.0.0 without auth"):
        thrift.start(spark, host="0.0.0.0", port=free_port())
    server_auth.check_keystore(spark, server_auth.Tls(keys.keystore, KEYSTORE_PASSWORD))
    with pytest.raises(server_auth.ServerSecurityError, match=f"cannot open the keystore {keys.keystore}: wrong "
                                                              "password"):
        server_auth.check_keystore(spark, server_auth.Tls(keys.keystore, "not-the-password"))


# --- password files -----------------------------------------------------------------------------


def passwd(monkeypatch: pytest.MonkeyPatch, *args: str, stdin: str = "") -> int:
    """``python -m sparkseq passwd ARGS`` in this process, the password piped in."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    return cli.main(["passwd", *args])


def test_passwd_writes_salted_hashes_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "users"
    for user in ("ann", "ben"):
        assert passwd(monkeypatch, str(path), user, stdin="same password\n") == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "same password" not in path.read_text()
    users = server_auth.read_users(path)
    assert sorted(users) == ["ann", "ben"]
    assert users["ann"] != users["ben"]  # salted
    assert users["ann"].startswith(f"pbkdf2-sha256${server_auth.PASSWORD_ITERATIONS}$")
    assert server_auth.verify_password(users["ann"], "same password")
    assert not server_auth.verify_password(users["ann"], "same passwor")
    assert passwd(monkeypatch, str(path), "ann", stdin="new one\n") == 0
    assert server_auth.verify_password(server_auth.read_users(path)["ann"], "new one")
    assert passwd(monkeypatch, str(path), "ben", "--delete") == 0
    assert sorted(server_auth.read_users(path)) == ["ann"]
    capsys.readouterr()
    assert passwd(monkeypatch, str(path), "bad:name", stdin="x\n") == 1
    assert "user name 'bad:name': no ':'" in capsys.readouterr().err
    assert passwd(monkeypatch, str(path), "cy", stdin="\n") == 1
    assert "the password is empty" in capsys.readouterr().err
    assert sorted(server_auth.read_users(path)) == ["ann"]
