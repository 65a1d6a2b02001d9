package sparkseq.jvm;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

import org.apache.spark.SparkRuntimeException;
import org.apache.spark.QueryContext;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SupportQueryContext;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.trees.Origin;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.execution.CommandExecutionMode;
import scala.Option;
import scala.Some;
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
 * <p>Errors speak of the user's text, not of the SQL it became. A rewritten statement is
 * analysed right after parsing; Spark's analysis error is handed back to the rewriter
 * ({@link SessionRewriter#place}), which places it in the statement as written. And the
 * rewriter says where each DEFINE condition the user wrote stands in the rewritten text
 * ({@link Origins}): the expressions parsed from there carry the user's text and the
 * condition's place as their origin, so an error raised while the job runs (a cast of a
 * malformed value under ANSI mode) points at the DEFINE; other expressions of the
 * rewritten text carry no origin, so no error quotes generated SQL.
 *
 * <p>Shipped compiled in sparkseq/jvm/sparkseq-extension.jar; rebuild it after editing
 * this file with {@code python -m sparkseq.jvm_parser --build} (a JDK's javac against
 * the installed pyspark jars; no build tool is involved).
 */
public final class SparkSeqExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    /** A rewriter result starting with this is an error message for the client. */
    public static final String ERROR_PREFIX = "\u0000sparkseq-error:";
    /** A rewriter result starting with this carries where the user's DEFINE conditions stand in it. */
    public static final String ORIGINS_PREFIX = "\u0000sparkseq-origins:";

    /** What the Python driver installs; called on py4j callback threads. */
    public interface SessionRewriter {
        /** Called once per session, before its first statement or table name parsed after installation. */
        void prepare(SparkSession session);

        /**
         * The statement as plain Spark SQL, or {@link #ERROR_PREFIX} and a message; a rewritten
         * statement prefixed by {@link #ORIGINS_PREFIX}, its {@link Origins} (JSON) and a NUL character.
         */
        String rewrite(SparkSession session, String sql);

        /** Spark's analysis error on rewritten {@code sql} placed in it: {@link #ERROR_PREFIX} and a message, or null. */
        String place(SparkSession session, String sql, Throwable error);
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
    /** Where Spark parses a view's stored text (SessionCatalog: the query of CREATE VIEW, as Spark parsed it). */
    private static final Set<String> VIEW_METHODS = Set.of("parseQuery");
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

    /**
     * Announce that the next parse of {@code sql} is of a statement that sparkseq.sql (or the
     * DataFrame API) rewrote in Python, whose DEFINE conditions {@code spec} places in the
     * user's text (see {@link Origins#parse}).
     */
    public static void expectOrigins(String sql, String spec) {
        Origins.expect(sql, spec);
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
                Rewritten rewritten = null;
                if (args != null && args.length > 0 && args[0] instanceof String
                        && STATEMENT_METHODS.contains(method.getName())) {
                    rewritten = rewrite(current, session, (String) args[0]);
                    args[0] = rewritten.sql;
                }
                Object result;
                try {
                    result = method.invoke(delegate, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
                if (rewritten != null && result instanceof LogicalPlan) {
                    rewritten.settle(current, session, (LogicalPlan) result);
                } else if (VIEW_METHODS.contains(method.getName()) && args != null && args.length > 0
                        && args[0] instanceof String && result instanceof LogicalPlan) {
                    Origins view = Origins.ofView((String) args[0]);
                    if (view != null) {
                        view.applyTo((LogicalPlan) result);
                    }
                }
                return result;
            });
    }

    private static void prepare(SessionRewriter current, SparkSession session) {
        try {
            current.prepare(session);
        } catch (RuntimeException e) {
            // The session still parses; a statement needing what prepare() sets up fails with Spark's error.
        }
    }

    static Rewritten rewrite(SessionRewriter current, SparkSession session, String sql) {
        if (!NEEDS_REWRITER.matcher(sql).find()) {
            return new Rewritten(sql, sql, Origins.expected(sql));
        }
        if (current == null && !OPERATOR.matcher(sql).find()) {
            // seq_* calls without the rewriter: Spark runs (or refuses) them as written
            return new Rewritten(sql, sql, null);
        }
        String result;
        try {
            result = current == null ? ERROR_PREFIX + NO_REWRITER : current.rewrite(session, sql);
        } catch (RuntimeException e) {  // e.g. the Python driver's callback server is gone
            result = ERROR_PREFIX + "sparkseq's rewriter could not be called: " + e;
        }
        if (result != null && result.startsWith(ERROR_PREFIX)) {
            throw userError(result);
        }
        if (result != null && result.startsWith(ORIGINS_PREFIX)) {
            int end = result.indexOf('\u0000', ORIGINS_PREFIX.length());
            String rewrittenSql = result.substring(end + 1);
            return new Rewritten(sql, rewrittenSql,
                Origins.remember(Origins.parse(rewrittenSql, result.substring(ORIGINS_PREFIX.length(), end))));
        }
        return new Rewritten(sql, result, null);
    }

    /**
     * The rewriter's message as an error for the client: unchecked, so the proxy passes it
     * through; USER_RAISED_EXCEPTION carries the message verbatim (SQLSTATE P0001), as
     * raise_error() does.
     */
    static SparkRuntimeException userError(String result) {
        return new SparkRuntimeException("USER_RAISED_EXCEPTION",
            Map$.MODULE$.<String, String>empty().updated("errorMessage", result.substring(ERROR_PREFIX.length())),
            null, new QueryContext[0], "");
    }

    /** One statement as the user wrote it and as Spark parses it. */
    static final class Rewritten {
        final String original;
        final String sql;
        /** Where the user's DEFINE conditions stand in {@link #sql}; null: leave the origins as parsed. */
        final Origins origins;

        Rewritten(String original, String sql, Origins origins) {
            this.original = original;
            this.sql = sql;
            this.origins = origins;
        }

        /** The parsed plan's origins in the user's text; a statement the rewriter changed analysed. */
        void settle(SessionRewriter current, SparkSession session, LogicalPlan plan) {
            if (origins != null) {
                origins.applyTo(plan);
            }
            if (current != null && !sql.equals(original)) {
                check(current, session, plan);
            }
        }

        /**
         * Analyse the plan as Spark will (commands are not run); Spark's error goes to the
         * rewriter, which places it in the user's text. A plan of unbound parameters (Spark's
         * legacy parameter mode binds them after parsing), an error that is not an analysis
         * error, or one the rewriter cannot place is left for Spark's own analysis to raise.
         */
        void check(SessionRewriter current, SparkSession session, LogicalPlan plan) {
            if (!(session instanceof org.apache.spark.sql.classic.SparkSession)) {
                return;
            }
            try {
                ((org.apache.spark.sql.classic.SparkSession) session).sessionState()
                    .executePlan(plan, CommandExecutionMode.SKIP()).assertAnalyzed();
            } catch (Exception thrown) {  // Scala declares no checked exceptions
                if (!(thrown instanceof AnalysisException)) {
                    return;  // not an analysis error: Spark raises it itself, as it would have
                }
                AnalysisException e = (AnalysisException) thrown;
                String condition = e.getCondition();
                if (condition != null && condition.startsWith("UNBOUND_SQL_PARAMETER")) {
                    return;
                }
                String placed = null;
                try {
                    placed = current.place(session, original, e);
                } catch (RuntimeException callback) {
                    // the rewriter could not be called: Spark's own error below
                }
                if (placed != null && placed.startsWith(ERROR_PREFIX)) {
                    // unchecked, as the compiler's errors: parsePlan may throw no other checked exception
                    throw userError(placed);
                }
                // not placed: Spark analyses the plan again and raises its own error
            }
        }
    }

    /**
     * Where the user's DEFINE conditions stand in a rewritten statement: spans of the
     * rewritten text (start and stop offsets, inclusive) and the user's text each came from.
     * Applied to the parsed plan, every node parsed from inside a span gets the user's text
     * and the condition's place as its origin; every other node parsed from the rewritten
     * text gets none. {@link #expect} announces the origins of a statement that
     * {@code sparkseq.sql} rewrote in Python and hands to {@code spark.sql} as plain SQL.
     */
    static final class Origins {
        private static final int EXPECTED_KEPT = 64;
        private static final java.util.Map<String, Origins> EXPECTED = java.util.Collections.synchronizedMap(
            new java.util.LinkedHashMap<String, Origins>() {
                @Override
                protected boolean removeEldestEntry(java.util.Map.Entry<String, Origins> eldest) {
                    return size() > EXPECTED_KEPT;
                }
            });
        private static volatile boolean anyExpected;
        /** Rewritten statements whose views may be read later (by their stored text), most recent kept. */
        private static final int REWRITTEN_KEPT = 256;
        private static final java.util.Map<String, Origins> REWRITTEN = java.util.Collections.synchronizedMap(
            new java.util.LinkedHashMap<String, Origins>(16, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(java.util.Map.Entry<String, Origins> eldest) {
                    return size() > REWRITTEN_KEPT;
                }
            });
        /** Every SQL text sparkseq generates names its internal columns so (quoted). */
        private static final String GENERATED_NAME = "`__sparkseq_";

        final String sql;
        /** Offsets into {@link #sql} (start and stop, inclusive) and the origin of what was parsed from there. */
        final int[] from;
        final int[] to;
        final Origin[] origins;

        Origins(String sql, int[] from, int[] to, Origin[] origins) {
            this.sql = sql;
            this.from = from;
            this.to = to;
            this.origins = origins;
        }

        /**
         * {@code spec}, JSON: {@code {"texts": [{"text": t, "type": y, "name": n}, ...], "spans":
         * [[from, to, text, start, stop], ...]}} -- each span of {@code sql} (offsets, inclusive) came
         * from {@code texts[text]} at {@code start..stop}; a text with a type and name is an object
         * of that name (a DataFrame API argument), positions counted in it.
         */
        static Origins parse(String sql, String spec) {
            try {
                com.fasterxml.jackson.databind.JsonNode root = new com.fasterxml.jackson.databind.ObjectMapper()
                    .readTree(spec);
                com.fasterxml.jackson.databind.JsonNode texts = root.path("texts");
                com.fasterxml.jackson.databind.JsonNode spans = root.path("spans");
                int n = spans.size();
                int[] from = new int[n];
                int[] to = new int[n];
                Origin[] origins = new Origin[n];
                for (int i = 0; i < n; i++) {
                    com.fasterxml.jackson.databind.JsonNode span = spans.get(i);
                    com.fasterxml.jackson.databind.JsonNode text = texts.get(span.get(2).asInt());
                    from[i] = span.get(0).asInt();
                    to[i] = span.get(1).asInt();
                    origins[i] = userOrigin(text.path("text").asText(), span.get(3).asInt(), span.get(4).asInt(),
                        text.path("type").asText(""), text.path("name").asText(""));
                }
                return new Origins(sql, from, to, origins);
            } catch (com.fasterxml.jackson.core.JacksonException | RuntimeException e) {
                return null;  // errors keep the rewritten text's positions
            }
        }

        static void expect(String sql, String spec) {
            Origins origins = remember(parse(sql, spec));
            if (origins != null) {
                EXPECTED.put(sql, origins);
                anyExpected = true;
            }
        }

        /** Keep {@code origins} for the views a statement creates: Spark parses their text again when they are read. */
        static Origins remember(Origins origins) {
            if (origins != null) {
                REWRITTEN.put(origins.sql, origins);
            }
            return origins;
        }

        /**
         * The origins of a view's stored text that is (part of) a statement sparkseq rewrote:
         * those of the statement, shifted; when the statement is not known (a view created before
         * this driver started, or long ago), none at all, so that no error quotes generated SQL.
         * Null for any other view.
         */
        static Origins ofView(String text) {
            if (!text.contains(GENERATED_NAME)) {
                return null;
            }
            synchronized (REWRITTEN) {
                for (Origins origins : REWRITTEN.values()) {
                    int at = origins.sql.indexOf(text);
                    if (at >= 0) {
                        return origins.shifted(text, at);
                    }
                }
            }
            return new Origins(text, new int[0], new int[0], new Origin[0]);
        }

        private Origins shifted(String text, int at) {
            int[] shiftedFrom = new int[from.length];
            int[] shiftedTo = new int[to.length];
            for (int i = 0; i < from.length; i++) {
                shiftedFrom[i] = from[i] - at;
                shiftedTo[i] = to[i] - at;
            }
            return new Origins(text, shiftedFrom, shiftedTo, origins);
        }

        static Origins expected(String sql) {
            return anyExpected ? EXPECTED.remove(sql) : null;
        }

        void applyTo(LogicalPlan plan) {
            try {
                plan.foreachWithSubqueries(new AbstractFunction1<LogicalPlan, BoxedUnit>() {
                    @Override
                    public BoxedUnit apply(LogicalPlan node) {
                        retarget(node);
                        scala.collection.Iterator<Expression> expressions = node.expressions().iterator();
                        while (expressions.hasNext()) {
                            expressions.next().foreach(new AbstractFunction1<Expression, BoxedUnit>() {
                                @Override
                                public BoxedUnit apply(Expression expression) {
                                    retarget(expression);
                                    return BoxedUnit.UNIT;
                                }
                            });
                        }
                        return BoxedUnit.UNIT;
                    }
                });
            } catch (LinkageError | RuntimeException e) {
                // another Spark's trees: errors keep the rewritten text's positions
            }
        }

        private void retarget(TreeNode<?> node) {
            Origin origin = node.origin();
            if (origin.sqlText().isEmpty() || origin.startIndex().isEmpty() || origin.stopIndex().isEmpty()
                    || !sql.equals(origin.sqlText().get())) {
                return;  // not parsed from the rewritten text (e.g. a view's own text)
            }
            int start = offset(origin, (Integer) origin.startIndex().get());
            int stop = offset(origin, (Integer) origin.stopIndex().get());
            Origin target = NONE;
            for (int i = 0; i < from.length; i++) {
                if (from[i] <= start && stop <= to[i]) {
                    target = origins[i];
                    break;
                }
            }
            setOrigin(node, origin.objectType().isDefined() && target.objectType().isEmpty()
                ? inObject(target, origin) : target);
        }

        /** An offset into {@link #sql} (Spark may have parsed it with parameters substituted). */
        private static int offset(Origin origin, int index) {
            return origin.positionMapper().isDefined() ? origin.positionMapper().get().mapToOriginal(index) : index;
        }

        private static Origin userOrigin(String text, int start, int stop, String type, String name) {
            int lineStart = text.lastIndexOf('\n', start - 1) + 1;
            int line = 1;
            for (int i = 0; i < lineStart; i++) {
                line += text.charAt(i) == '\n' ? 1 : 0;
            }
            return new Origin(new Some<Object>(line), new Some<Object>(start - lineStart), new Some<Object>(start),
                new Some<Object>(stop), new Some<String>(text), option(type), option(name), none(), none(), none());
        }

        /** {@code target} in the object (the view) {@code parsed} was parsed from: its errors say which. */
        private static Origin inObject(Origin target, Origin parsed) {
            return new Origin(target.line(), target.startPosition(), target.startIndex(), target.stopIndex(),
                target.sqlText(), parsed.objectType(), parsed.objectName(), none(), none(), none());
        }

        private static Option<String> option(String value) {
            return value.isEmpty() ? none() : new Some<String>(value);
        }

        private static final Origin NONE = new Origin(none(), none(), none(), none(), none(), none(), none(), none(),
            none(), none());

        @SuppressWarnings("unchecked")
        private static <T> Option<T> none() {
            return (Option<T>) scala.None$.MODULE$;
        }

        private static final java.lang.reflect.Field ORIGIN_FIELD = originField();

        private static java.lang.reflect.Field originField() {
            try {
                java.lang.reflect.Field field = TreeNode.class.getDeclaredField("origin");
                field.setAccessible(true);
                return field;
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }

        /**
         * Trees are immutable once analysed; this one was just parsed and no one else holds it.
         * An expression that keeps its error context (ANSI arithmetic, casts) takes it anew.
         */
        private static void setOrigin(TreeNode<?> node, Origin origin) {
            if (ORIGIN_FIELD == null) {
                return;
            }
            try {
                ORIGIN_FIELD.set(node, origin);
            } catch (IllegalAccessException e) {
                return;
            }
            if (node instanceof SupportQueryContext) {
                SupportQueryContext context = (SupportQueryContext) node;
                context.queryContext_$eq(context.initQueryContext());
            }
        }
    }
}
