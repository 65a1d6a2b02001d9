package sparkseq.jvm;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Set;
import java.util.function.Function;
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
 * MATCH_AGGREGATE reach Spark through any entry point of the session, e.g. a JDBC
 * client of the in-process Thrift server.
 *
 * <p>The injected parser wraps Spark's own. A statement whose text contains
 * {@code MATCH_AGGREGATE (} or calls one of sparkseq's grouped-aggregate Python
 * functions ({@code seq_count(}, ..., {@code sparkseq_count(}: Spark cannot run them beside
 * its own aggregates, with FILTER or without GROUP BY, so the rewriter splits such a
 * SELECT) is handed to the rewriter that sparkseq's Python driver installs over py4j
 * ({@link #setRewriter}); the plain Spark SQL it returns is parsed by Spark's parser (a
 * statement that needs no change comes back as it was). Everything else goes to Spark's
 * parser untouched, without leaving the JVM. The wrapper is
 * a dynamic proxy, so it does not depend on the exact method set of
 * {@code ParserInterface}, which grows between Spark releases.
 *
 * <p>Compiled by sparkseq (sparkseq/jvm_parser.py) with the JDK's javac against the
 * installed pyspark jars; no build tool is involved.
 */
public final class SparkSeqExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    /** A rewriter result starting with this is an error message for the client. */
    public static final String ERROR_PREFIX = "\u0000sparkseq-error:";

    /** Statement-level entry points; expressions, identifiers and types never hold the operator. */
    private static final Set<String> STATEMENT_METHODS = Set.of("parsePlan", "parsePlanWithParameters");
    /** The operator, or a call of a grouped-aggregate Python function (one regex scan per statement). */
    private static final Pattern NEEDS_REWRITER = Pattern.compile(
        "(?i)\\b(?:MATCH_AGGREGATE|seq_(?:count|sum|avg|min|max)(?:_windows)?|sparkseq_count(?:_windows)?)\\s*\\(");
    private static volatile Function<String, String> rewriter;
    private static volatile boolean injected;

    /** Install (or, with null, remove) the function that rewrites MATCH_AGGREGATE and seq_* text. */
    public static void setRewriter(Function<String, String> function) {
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
                return wrap(delegate);
            }
        });
        injected = true;
        return BoxedUnit.UNIT;
    }

    static ParserInterface wrap(ParserInterface delegate) {
        return (ParserInterface) Proxy.newProxyInstance(
            ParserInterface.class.getClassLoader(), new Class<?>[] {ParserInterface.class},
            (proxy, method, args) -> {
                if (args != null && args.length > 0 && args[0] instanceof String
                        && STATEMENT_METHODS.contains(method.getName())) {
                    args[0] = rewrite((String) args[0]);
                }
                try {
                    return method.invoke(delegate, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            });
    }

    static String rewrite(String sql) {
        Function<String, String> function = rewriter;
        if (function == null || !NEEDS_REWRITER.matcher(sql).find()) {
            return sql;
        }
        String result = function.apply(sql);
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
