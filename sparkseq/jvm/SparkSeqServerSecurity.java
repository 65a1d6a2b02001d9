package sparkseq.jvm;

import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.security.sasl.AuthenticationException;

import org.apache.hive.service.auth.PasswdAuthenticationProvider;

/**
 * What sparkseq's servers need from the JVM for authentication and encryption
 * (sparkseq/servers/auth.py drives it):
 *
 * <ul>
 *   <li>{@link PasswordFile}: HiveServer2 CUSTOM authentication against a file of
 *       {@code user:pbkdf2-sha256$iterations$salt$hash} lines, the format
 *       {@code python -m sparkseq passwd} writes;</li>
 *   <li>{@link TlsTunnel}: TLS in front of a plaintext gRPC server on loopback (Spark
 *       Connect has no TLS of its own), with a Java keystore and ALPN {@code h2}.</li>
 * </ul>
 */
public final class SparkSeqServerSecurity {

  private SparkSeqServerSecurity() {
  }

  /**
   * HiveServer2's CUSTOM authentication provider for a password file. HiveServer2 builds
   * one per login from a fresh {@code HiveConf}, which sees Java system properties but not
   * the server's configuration: the file's path is the system property {@link #FILE_PROPERTY}.
   * The file is read at every login, so users added while the server runs can log in.
   */
  public static final class PasswordFile implements PasswdAuthenticationProvider {

    /** The system property naming the password file. */
    public static final String FILE_PROPERTY = "sparkseq.thrift.passwordFile";
    /** The only hash scheme: PBKDF2 with HMAC-SHA256. */
    public static final String SCHEME = "pbkdf2-sha256";
    /** Hashed for unknown users, so that a login costs the same whether the user exists. */
    private static final String UNKNOWN_USER = SCHEME + "$600000$AAAAAAAAAAAAAAAAAAAAAA==$"
        + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

    @Override
    public void Authenticate(String user, String password) throws AuthenticationException {
      String path = System.getProperty(FILE_PROPERTY);
      if (path == null || path.isEmpty()) {
        throw new AuthenticationException("sparkseq: no password file configured (" + FILE_PROPERTY + ")");
      }
      if (user == null || user.isEmpty() || password == null || password.isEmpty()) {
        throw new AuthenticationException("a user name and a password are required");
      }
      user = utf8(user);
      password = utf8(password);
      String stored;
      try {
        stored = lookUp(Paths.get(path), user);
      } catch (IOException e) {
        throw new AuthenticationException("sparkseq: cannot read the password file " + path + ": " + e);
      }
      boolean matches = verify(stored == null ? UNKNOWN_USER : stored, password);
      if (stored == null || !matches) {
        throw new AuthenticationException("wrong user name or password");
      }
    }

    /**
     * HiveServer2's PLAIN server turns each byte of the login into a char by a signed cast
     * ({@code PlainSaslServer.evaluateResponse}), which garbles anything but ASCII: undo it,
     * so that UTF-8 names and passwords compare as the client sent them.
     */
    static String utf8(String received) {
      byte[] bytes = new byte[received.length()];
      for (int i = 0; i < received.length(); i++) {
        char c = received.charAt(i);
        if (c >= 0x80 && c < 0xFF80) {
          return received;  // not made by that cast: as given
        }
        bytes[i] = (byte) c;
      }
      return new String(bytes, StandardCharsets.UTF_8);
    }

    /** The hash stored for {@code user} in {@code file}, or null. */
    static String lookUp(Path file, String user) throws IOException {
      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
        if (line.isBlank() || line.startsWith("#")) {
          continue;
        }
        int colon = line.indexOf(':');
        if (colon > 0 && line.substring(0, colon).equals(user)) {
          return line.substring(colon + 1).trim();
        }
      }
      return null;
    }

    /** True when {@code password} hashes to {@code stored} ({@code scheme$iterations$salt$hash}). */
    public static boolean verify(String stored, String password) throws AuthenticationException {
      String[] parts = stored.split("\\$");
      if (parts.length != 4 || !parts[0].equals(SCHEME)) {
        throw new AuthenticationException("sparkseq: a password file line is not " + SCHEME
            + "$iterations$salt$hash");
      }
      try {
        int iterations = Integer.parseInt(parts[1]);
        byte[] salt = Base64.getDecoder().decode(parts[2]);
        byte[] expected = Base64.getDecoder().decode(parts[3]);
        PBEKeySpec spec = new PBEKeySpec(password.toCharArray(), salt, iterations, expected.length * 8);
        byte[] actual = SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256").generateSecret(spec).getEncoded();
        spec.clearPassword();
        return MessageDigest.isEqual(actual, expected);
      } catch (IllegalArgumentException | GeneralSecurityException e) {
        throw new AuthenticationException("sparkseq: a password file line cannot be read: " + e);
      }
    }
  }

  /**
   * Accepts TLS connections on an address and relays their plaintext to a target on
   * this machine: TLS for a server that has none (Spark Connect's gRPC). Offers ALPN
   * {@code h2}, which gRPC clients require. One thread per direction per connection.
   */
  public static final class TlsTunnel implements Closeable {

    private static final int HANDSHAKE_TIMEOUT_MS = 30_000;
    private final SSLServerSocket server;
    private final String targetHost;
    private final int targetPort;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /**
     * Listen on {@code host:port} (port 0: any free port) with the key of {@code keystore}
     * (PKCS12 or JKS; store and key password {@code password}); relay to
     * {@code targetHost:targetPort}.
     */
    public TlsTunnel(String host, int port, String keystore, String password, String targetHost, int targetPort)
        throws IOException, GeneralSecurityException {
      char[] secret = password.toCharArray();
      KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      keys.init(loadKeyStore(keystore, password), secret);
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys.getKeyManagers(), null, null);
      this.targetHost = targetHost;
      this.targetPort = targetPort;
      server = (SSLServerSocket) context.getServerSocketFactory().createServerSocket();
      SSLParameters parameters = server.getSSLParameters();
      parameters.setProtocols(new String[] {"TLSv1.3", "TLSv1.2"});
      parameters.setApplicationProtocols(new String[] {"h2"});
      server.setSSLParameters(parameters);
      server.setReuseAddress(true);
      server.bind(new InetSocketAddress(host, port), 128);
      Thread acceptor = new Thread(this::accept, "sparkseq-tls-tunnel-" + server.getLocalPort());
      acceptor.setDaemon(true);
      acceptor.start();
    }

    /** The port it listens on. */
    public int port() {
      return server.getLocalPort();
    }

    /** Stop listening and drop every relayed connection. Idempotent. */
    @Override
    public void close() {
      closed = true;
      closeQuietly(server);
      for (Socket socket : open) {
        closeQuietly(socket);
      }
    }

    private void accept() {
      while (!closed) {
        try {
          Socket client = server.accept();
          Thread relay = new Thread(() -> relay((SSLSocket) client), "sparkseq-tls-relay");
          relay.setDaemon(true);
          relay.start();
        } catch (IOException e) {
          if (closed) {
            return;
          }
        }
      }
    }

    private void relay(SSLSocket client) {
      open.add(client);
      Socket target = null;
      try {
        client.setSoTimeout(HANDSHAKE_TIMEOUT_MS);
        client.startHandshake();  // a plaintext or untrusting client fails here: nothing is relayed
        client.setSoTimeout(0);
        client.setTcpNoDelay(true);
        target = new Socket(targetHost, targetPort);
        open.add(target);
        target.setTcpNoDelay(true);
        Socket to = target;
        Thread upstream = new Thread(() -> pump(client, to), "sparkseq-tls-relay-up");
        upstream.setDaemon(true);
        upstream.start();
        pump(target, client);
      } catch (IOException e) {
        closeBoth(client, target);
      }
    }

    private void pump(Socket from, Socket to) {
      byte[] buffer = new byte[65536];
      try {
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
          out.write(buffer, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // a connection closed: close the other side too
      }
      closeBoth(from, to);
    }

    private void closeBoth(Socket one, Socket other) {
      for (Socket socket : new Socket[] {one, other}) {
        if (socket != null) {
          open.remove(socket);
          closeQuietly(socket);
        }
      }
    }

    private static void closeQuietly(Closeable closeable) {
      try {
        closeable.close();
      } catch (IOException e) {
        // already closed
      }
    }
  }

  /**
   * The keystore at {@code path} (PKCS12 or JKS), checked to hold a private key; the
   * exception's message says what is wrong in the user's terms.
   */
  public static KeyStore loadKeyStore(String path, String password) throws IOException, GeneralSecurityException {
    File file = new File(path);
    if (!file.isFile()) {
      throw new IOException("no keystore file " + path);
    }
    KeyStore store;
    try {
      store = KeyStore.getInstance(file, password.toCharArray());
    } catch (IOException e) {
      throw new IOException("cannot open the keystore " + path + " (wrong password, or not a PKCS12/JKS file): "
          + e.getMessage());
    }
    for (String alias : java.util.Collections.list(store.aliases())) {
      if (store.isKeyEntry(alias)) {
        return store;
      }
    }
    throw new IOException("the keystore " + path + " holds no private key (create one with keytool -genkeypair)");
  }
}
