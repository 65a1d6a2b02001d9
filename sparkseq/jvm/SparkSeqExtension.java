package sparkseq.jvm;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

import org.apache.spark.SparkRuntimeException;
import org.apache.spark.QueryContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import scala.collection.immutable.Map$;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * A Spark session extension (spark.sql.extensions) that lets SQL text with
 * MATCH_AGGREGATE reach Spark through any entry point of a session: spark.sql, a
 * JDBC client of the in-process Thrift server, a Spark Connect client.
 *
 * <p>The injected parser wraps Spark's own, one wrapper per session. A statement
 * whose text contains {@code MATCH_AGGREGATE (} or calls one of sparkseq's
 * grouped-aggregate Python functions ({@code seq_count(}, ..., {@code sparkseq_count(}:
 * Spark cannot run them beside its own aggregates, with FILTER or without GROUP BY, so
 * the rewriter splits such a SELECT) is handed, with the session parsing it, to the
 * {@link SessionRewriter} that sparkseq's Python driver installs over py4j
 * ({@link #setRewriter}); the plain Spark SQL it returns is parsed by Spark's parser (a
 * statement that needs no change comes back as it was). Everything else goes to Spark's
 * parser untouched, without leaving the JVM. The wrapper is a dynamic proxy, so it does
 * not depend on the exact method set of {@code ParserInterface}, which grows between
 * Spark releases.
 *
 * <p>Shipped compiled in sparkseq/jvm/sparkseq-extension.jar; rebuild it after editing
 * this file with {@code python -m sparkseq.jvm_parser --build} (a JDK's javac against
 * the installed pyspark jars; no build tool is involved).
 */
public final class SparkSeqExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    /** A rewriter result starting with this is an error message for the client. */
    public static final String ERROR_PREFIX = "\u0000sparkseq-error:";

    /** What the Python driver installs; called on py4j callback threads. */
    public interface SessionRewriter {
        /** Called once per session, before its first statement or table name parsed after installation. */
        void prepare(SparkSession session);

        /** The statement as plain Spark SQL, or {@link #ERROR_PREFIX} and a message. */
        String rewrite(SparkSession session, String sql);
    }

    /** Statement-level entry points; expressions, identifiers and types never hold the operator. */
    private static final Set<String> STATEMENT_METHODS = Set.of("parsePlan", "parsePlanWithParameters");
    /**
     * Entry points after which a session is prepared: those of spark.sql, spark.table (also over Connect) and
     * the catalog API, which Spark calls at the top of a request. Not parseQuery (view text,
     * parsed inside the session catalog's locks, which prepare() may need) nor expressions
     * or types (parsed during analysis).
     */
    private static final Set<String> PREPARING_METHODS = Set.of(
        "parsePlan", "parsePlanWithParameters", "parseMultipartIdentifier", "parseTableIdentifier",
        "parseTemporalTableIdentifier");
    private static final Pattern OPERATOR = Pattern.compile("(?i)\\bMATCH_AGGREGATE\\s*\\(");
    /** The operator, or a call of a grouped-aggregate Python function (one regex scan per statement). */
    private static final Pattern NEEDS_REWRITER = Pattern.compile(
        "(?i)\\b(?:MATCH_AGGREGATE|seq_(?:count|sum|avg|min|max)(?:_windows)?|sparkseq_count(?:_windows)?)\\s*\\(");
    private static final String NO_REWRITER = "MATCH_AGGREGATE needs sparkseq's rewriter, which runs in the "
        + "Python driver, and none is installed in this Spark driver: build the session with sparkseq.session(), "
        + "or run the statement with sparkseq.sql(spark, text)";
    private static volatile SessionRewriter rewriter;
    private static volatile boolean injected;

    /** Install (or, with null, remove) the rewriter of this JVM's sessions. */
    public static void setRewriter(SessionRewriter function) {
        rewriter = function;
    }

    /** True once a session of this JVM was built with the extension. */
    public static boolean isInjected() {
        return injected;
    }

    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
            @Override
            public ParserInterface apply(SparkSession session, ParserInterface delegate) {
                return wrap(session, delegate);
            }
        });
        injected = true;
        return BoxedUnit.UNIT;
    }

    static ParserInterface wrap(SparkSession session, ParserInterface delegate) {
        // No lock: prepare() calls back into Python, which may parse on other JVM threads.
        AtomicBoolean prepared = new AtomicBoolean();
        return (ParserInterface) Proxy.newProxyInstance(
            ParserInterface.class.getClassLoader(), new Class<?>[] {ParserInterface.class},
            (proxy, method, args) -> {
                SessionRewriter current = rewriter;
                if (current != null && PREPARING_METHODS.contains(method.getName())
                        && prepared.compareAndSet(false, true)) {
                    prepare(current, session);
                }
                if (args != null && args.length > 0 && args[0] instanceof String
                        && STATEMENT_METHODS.contains(method.getName())) {
                    args[0] = rewrite(current, session, (String) args[0]);
                }
                try {
                    return method.invoke(delegate, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            });
    }

    private static void prepare(SessionRewriter current, SparkSession session) {
        try {
            current.prepare(session);
        } catch (RuntimeException e) {
            // The session still parses; a statement needing what prepare() sets up fails with Spark's error.
        }
    }

    static String rewrite(SessionRewriter current, SparkSession session, String sql) {
        if (!NEEDS_REWRITER.matcher(sql).find()) {
            return sql;
        }
        if (current == null && !OPERATOR.matcher(sql).find()) {
            return sql;  // seq_* calls without the rewriter: Spark runs (or refuses) them as written
        }
        String result;
        try {
            result = current == null ? ERROR_PREFIX + NO_REWRITER : current.rewrite(session, sql);
        } catch (RuntimeException e) {  // e.g. the Python driver's callback server is gone
            result = ERROR_PREFIX + "sparkseq's rewriter could not be called: " + e;
        }
        if (result != null && result.startsWith(ERROR_PREFIX)) {
            // Unchecked, so the proxy passes it through; USER_RAISED_EXCEPTION carries the
            // message verbatim (SQLSTATE P0001), as raise_error() does.
            throw new SparkRuntimeException("USER_RAISED_EXCEPTION",
                Map$.MODULE$.<String, String>empty().updated("errorMessage", result.substring(ERROR_PREFIX.length())),
                null, new QueryContext[0], "");
        }
        return result;
    }
}
