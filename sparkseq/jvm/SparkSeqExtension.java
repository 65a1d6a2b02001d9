package sparkseq.jvm;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

import org.apache.spark.SparkRuntimeException;
import org.apache.spark.QueryContext;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry;
import org.apache.spark.sql.catalyst.analysis.UnresolvedFunction;
import org.apache.spark.sql.catalyst.analysis.UnresolvedTableValuedFunction;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.PythonFuncExpression;
import org.apache.spark.sql.catalyst.expressions.SupportQueryContext;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import org.apache.spark.sql.catalyst.plans.logical.AlterViewAs;
import org.apache.spark.sql.catalyst.plans.logical.CreateView;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.trees.CurrentOrigin;
import org.apache.spark.sql.catalyst.trees.Origin;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.execution.CommandExecutionMode;
import scala.Function1;
import scala.Option;
import scala.Some;
import scala.collection.immutable.Map$;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.AbstractPartialFunction;
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
 * <p>Persistent views ({@link Views}). sparkseq's functions are Python functions registered
 * in each session, and Spark refuses a persistent view whose plan calls a temporary
 * function by name. So every call of one of them ({@code seq_count}, the digest-named
 * engine functions a rewrite calls, ...) is resolved as it is parsed ({@link Functions}):
 * the plan holds the Python function itself, not its name. A persistent view over
 * MATCH_AGGREGATE or {@code seq_*} stores the query as the user wrote it, inside a marker
 * that makes plain Spark fail naming sparkseq ({@link Views#guard}); a session with this
 * extension reads the stored text through {@code parseQuery}, where the rewriter compiles
 * it again, in the view's catalog and namespace.
 *
 * <p>Shipped compiled in sparkseq/jvm/sparkseq-extension.jar; rebuild it after editing
 * this file with {@code python -m sparkseq.spark.jars --build} (a JDK's javac against
 * the installed pyspark jars; no build tool is involved).
 */
public final class SparkSeqExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    /** A rewriter result starting with this is an error message for the client. */
    public static final String ERROR_PREFIX = "\u0000sparkseq-error:";
    /** A rewriter result starting with this carries where the user's DEFINE conditions stand in it. */
    public static final String ORIGINS_PREFIX = "\u0000sparkseq-origins:";
    /**
     * A statement text starting with this comment carries, up to the comment's end, where the
     * user's DEFINE conditions stand in the text after it ({@link Origins#parse}, JSON in URL-safe
     * base64): sent by a client that rewrote the statement itself and cannot call
     * {@link #expectOrigins} (sparkseq.sql on a Spark Connect session). The comment is removed
     * before Spark parses the statement.
     */
    public static final String ORIGINS_COMMENT = "/*sparkseq-origins:";

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

        /**
         * A view's stored query as plain Spark SQL, as {@link #rewrite}; {@code view} (JSON) names
         * the view and the catalog and namespace its names resolve in ({@code {"view": name,
         * "namespace": [catalog, ...]}}; no namespace when unknown).
         */
        String rewriteView(SparkSession session, String sql, String view);
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
    /** Entry points whose plans may call sparkseq's functions (resolved as they are parsed, {@link Functions}). */
    private static final Set<String> PLAN_METHODS = Set.of("parsePlan", "parsePlanWithParameters", "parseQuery");
    private static final Pattern OPERATOR = Pattern.compile("(?i)\\bMATCH_AGGREGATE\\s*\\(");
    /** The operator, or a call of a grouped-aggregate Python function (one regex scan per statement). */
    private static final Pattern NEEDS_REWRITER = Pattern.compile(
        "(?i)\\b(?:MATCH_AGGREGATE|seq_(?:count|sum|avg|min|max)(?:_windows)?|seq_(?:steps|max_step)|sparkseq_count(?:_windows)?)\\s*\\(");
    private static final String NO_REWRITER = "MATCH_AGGREGATE needs sparkseq's rewriter, which runs in the "
        + "Python driver, and none is installed in this Spark driver: build the session with sparkseq.session(), "
        + "or run the statement with sparkseq.sql(spark, text)";
    private static final String NO_VIEW_REWRITER = "needs sparkseq's rewriter, which runs in the Python driver, and "
        + "none is installed in this Spark driver: read the view from a session built by sparkseq.session() (or "
        + "through sparkseq's Thrift or Connect server)";
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
                String name = method.getName();
                SessionRewriter current = rewriter;
                if (current != null && PREPARING_METHODS.contains(name) && prepared.compareAndSet(false, true)) {
                    prepare(current, session);
                }
                String text = args != null && args.length > 0 && args[0] instanceof String ? (String) args[0] : null;
                Rewritten rewritten = null;
                if (text != null && STATEMENT_METHODS.contains(name)) {
                    rewritten = rewrite(current, session, text);
                    args[0] = rewritten.sql;
                } else if (text != null && VIEW_METHODS.contains(name)) {
                    rewritten = Views.rewrite(current, session, text);
                    args[0] = rewritten.sql;
                }
                Object result;
                try {
                    result = method.invoke(delegate, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
                if (text == null || !PLAN_METHODS.contains(name) || !(result instanceof LogicalPlan)) {
                    return result;
                }
                LogicalPlan plan = (LogicalPlan) result;
                int[] resolved = new int[1];
                if (Functions.MENTIONED.matcher((String) args[0]).find()) {
                    plan = Functions.resolve(session, plan, resolved);
                }
                if (rewritten != null) {
                    rewritten.settle(current, session, plan, resolved[0] > 0, delegate);
                }
                return plan;
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
        if (sql.startsWith(ORIGINS_COMMENT)) {
            int end = sql.indexOf("*/", ORIGINS_COMMENT.length());
            if (end > 0) {
                String statement = sql.substring(end + 2);
                Rewritten rewritten = rewrite(current, session, statement);
                if (!rewritten.sql.equals(statement)) {
                    return rewritten;  // the rewriter changed it: its own origins
                }
                return new Rewritten(statement, statement, Origins.remember(Origins.parse(statement,
                    Origins.decoded(sql.substring(ORIGINS_COMMENT.length(), end)))));
            }
        }
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
        return rewritten(sql, result);
    }

    /** What the rewriter returned for {@code sql} ({@link SessionRewriter#rewrite}); its error thrown. */
    static Rewritten rewritten(String sql, String result) {
        if (result != null && result.startsWith(ERROR_PREFIX)) {
            throw userError(result);
        }
        if (result != null && result.startsWith(ORIGINS_PREFIX)) {
            int end = result.indexOf('\u0000', ORIGINS_PREFIX.length());
            String rewrittenSql = result.substring(end + 1);
            String spec = result.substring(ORIGINS_PREFIX.length(), end);
            return new Rewritten(sql, rewrittenSql, Origins.remember(Origins.parse(rewrittenSql, spec)),
                Views.userQuery(sql, spec));
        }
        if (result == null || result.equals(sql)) {
            // nothing to rewrite (e.g. "MATCH_AGGREGATE (" only inside a string literal of SQL
            // sparkseq generated): the origins announced for this text still apply
            return new Rewritten(sql, sql, Origins.expected(sql));
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

    /** One statement (or a view's stored query) as the user wrote it and as Spark parses it. */
    static final class Rewritten {
        final String original;
        final String sql;
        /** Where the user's DEFINE conditions stand in {@link #sql}; null: leave the origins as parsed. */
        final Origins origins;
        /** The query of a persistent CREATE / ALTER VIEW statement as the user wrote it, when the rewriter changed it. */
        final String userQuery;
        /** A view's stored query (parseQuery), not a statement. */
        final boolean view;

        Rewritten(String original, String sql, Origins origins) {
            this(original, sql, origins, null, false);
        }

        Rewritten(String original, String sql, Origins origins, String userQuery) {
            this(original, sql, origins, userQuery, false);
        }

        Rewritten(String original, String sql, Origins origins, String userQuery, boolean view) {
            this.original = original;
            this.sql = sql;
            this.origins = origins;
            this.userQuery = userQuery;
            this.view = view;
        }

        Rewritten asView() {
            return new Rewritten(original, sql, origins, null, true);
        }

        /**
         * The parsed plan's origins in the user's text; a persistent view created over sparkseq
         * ({@code sparkseq}: it calls sparkseq's functions, or the rewriter changed it) keeping the
         * user's text; a statement the rewriter changed analysed.
         */
        void settle(SessionRewriter current, SparkSession session, LogicalPlan plan, boolean sparkseq,
                    ParserInterface delegate) {
            if (view) {
                Origins placed = origins != null ? origins : Origins.ofView(sql);
                if (placed != null) {
                    placed.applyTo(plan);
                }
                return;
            }
            if (origins != null) {
                origins.applyTo(plan);
            }
            boolean changed = !sql.equals(original);
            if (changed || sparkseq) {
                Views.keepUserText(plan, changed, userQuery, delegate);
            }
            if (current != null && changed) {
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
     * Persistent views over MATCH_AGGREGATE and {@code seq_*}. CREATE VIEW and ALTER VIEW ... AS
     * keep the query as the user wrote it (Spark stores the parsed statement's {@code
     * originalText}, which would otherwise be the SQL it became, calling functions registered
     * only in this session), inside a marker ({@link #guard}); reading the view, Spark parses
     * the stored text with {@code parseQuery}, where the marker is taken off and the query
     * handed to the rewriter with the view's catalog and namespace ({@link #rewrite}).
     */
    static final class Views {
        /**
         * What a persistent view over sparkseq stores: {@link #GUARD_HEAD}, the user's query on
         * the lines after it, {@link #GUARD_TAIL}. To Spark without sparkseq it is a call of a
         * table function {@code needs_sparkseq}, which does not exist: the error names it, and
         * the comment, quoted with the error, says what to do. Spark's comments nest, so the
         * user's own comments may stay.
         */
        static final String GUARD_HEAD = "SELECT * FROM needs_sparkseq(/* This view is written in sparkseq's SQL "
            + "(MATCH_AGGREGATE, seq_* functions): Spark reads it in a session with sparkseq, e.g. sparkseq.session() "
            + "or sparkseq's Thrift or Connect server. Its query as written:\n";
        static final String GUARD_TAIL = "\n*/)";
        static final String GUARD_FUNCTION = "needs_sparkseq";
        /** The marker, whatever its first line says (a later sparkseq may word it differently). */
        private static final Pattern GUARDED = Pattern.compile(
            "\\ASELECT \\* FROM " + GUARD_FUNCTION + "\\(/\\*[^\n]*\n(.*)\n\\*/\\)\\z", Pattern.DOTALL);

        private Views() {
        }

        /** The user's query in the marker of {@link #GUARD_HEAD}, or null when {@code text} is not so marked. */
        static String unguarded(String text) {
            if (!text.startsWith("SELECT * FROM " + GUARD_FUNCTION + "(")) {
                return null;
            }
            java.util.regex.Matcher found = GUARDED.matcher(text);
            return found.matches() ? found.group(1) : null;
        }

        /**
         * {@code query} in the marker, when Spark's parser reads the result as the call it means
         * (a query holding {@code *}{@code /} outside a comment would end the comment early);
         * else the query itself: plain Spark then fails on MATCH_AGGREGATE or the function name.
         */
        static String guard(String query, ParserInterface delegate) {
            String guarded = GUARD_HEAD + query + GUARD_TAIL;
            try {
                LogicalPlan plan = delegate.parseQuery(guarded);
                if (plan instanceof Project && ((Project) plan).child() instanceof UnresolvedTableValuedFunction) {
                    UnresolvedTableValuedFunction call = (UnresolvedTableValuedFunction) ((Project) plan).child();
                    if (call.functionArgs().isEmpty() && call.name().size() == 1
                            && GUARD_FUNCTION.equals(call.name().head()) && query.equals(unguarded(guarded))) {
                        return guarded;
                    }
                }
            } catch (Exception e) {  // Spark's ParseException: not parsed as the marker, stored unmarked
            }
            return query;
        }

        /**
         * The user's query of a persistent CREATE / ALTER VIEW statement {@code statement} that the
         * rewriter changed: the span its origins spec names ({@code "view_query": [start, stop]},
         * offsets into the statement, inclusive), or null.
         */
        static String userQuery(String statement, String spec) {
            try {
                com.fasterxml.jackson.databind.JsonNode span = new com.fasterxml.jackson.databind.ObjectMapper()
                    .readTree(spec).path("view_query");
                if (span.size() != 2) {
                    return null;
                }
                return statement.substring(span.get(0).asInt(), span.get(1).asInt() + 1);
            } catch (com.fasterxml.jackson.core.JacksonException | RuntimeException e) {
                return null;
            }
        }

        /**
         * A persistent CREATE VIEW / ALTER VIEW ... AS plan over sparkseq stores the user's query,
         * marked ({@link #guard}): as Spark parsed it when the rewriter left the statement as
         * written ({@code changed} false: it calls {@code seq_*} functions), else {@code userQuery}.
         * Any other plan is left alone: a temporary view keeps the plan it was analysed to.
         */
        static void keepUserText(LogicalPlan plan, boolean changed, String userQuery, ParserInterface delegate) {
            String field;
            String parsed;
            if (plan instanceof CreateView) {
                Option<String> text = ((CreateView) plan).originalText();
                field = "originalText";
                parsed = text.isDefined() ? text.get() : null;
            } else if (plan instanceof AlterViewAs) {
                field = "originalText";
                parsed = ((AlterViewAs) plan).originalText();
            } else {
                return;
            }
            String query = changed ? userQuery : parsed;
            if (query == null) {
                throw userError(ERROR_PREFIX + "sparkseq could not find the query of this view in the statement as "
                    + "written, so it cannot store it: write it as CREATE [OR REPLACE] VIEW name [(columns)] AS query");
            }
            String stored = guard(query.strip(), delegate);
            try {
                java.lang.reflect.Field target = plan.getClass().getDeclaredField(field);
                target.setAccessible(true);
                target.set(plan, plan instanceof CreateView ? new Some<String>(stored) : stored);
            } catch (ReflectiveOperationException | RuntimeException e) {
                throw userError(ERROR_PREFIX + "sparkseq cannot store this view's text in this Spark version ("
                    + e + "); create a temporary view instead");
            }
        }

        /**
         * A view's stored text as Spark parses it: the marker taken off and, when the query needs
         * it, rewritten against the view's catalog and namespace ({@link SessionRewriter#rewriteView}).
         */
        static Rewritten rewrite(SessionRewriter current, SparkSession session, String text) {
            String inner = unguarded(text);
            String query = inner != null ? inner : text;
            if (!NEEDS_REWRITER.matcher(query).find()) {
                return new Rewritten(query, query, null, null, true);
            }
            String view = context(session);
            if (current == null) {
                if (inner == null && !OPERATOR.matcher(query).find()) {
                    return new Rewritten(query, query, null, null, true);  // seq_* calls: as Spark resolves them
                }
                throw userError(ERROR_PREFIX + "the view " + viewName(view) + " " + NO_VIEW_REWRITER);
            }
            if (session instanceof org.apache.spark.sql.classic.SparkSession && Thread.holdsLock(
                    ((org.apache.spark.sql.classic.SparkSession) session).sessionState().catalog())) {
                // the rewriter reads the catalog from another thread: it would wait for this one forever
                throw userError(ERROR_PREFIX + "sparkseq cannot compile the query of view " + viewName(view)
                    + " here: Spark reads it holding the session catalog's lock, which compiling needs; read the "
                    + "view in a query (SELECT * FROM view)");
            }
            String result;
            try {
                result = current.rewriteView(session, query, view);
            } catch (RuntimeException e) {  // e.g. the Python driver's callback server is gone
                result = ERROR_PREFIX + "sparkseq's rewriter could not be called: " + e;
            }
            return rewritten(query, result).asView();
        }

        private static String viewName(String context) {
            try {
                String name = new com.fasterxml.jackson.databind.ObjectMapper().readTree(context).path("view").asText("");
                return name.isEmpty() ? "" : name;
            } catch (com.fasterxml.jackson.core.JacksonException | RuntimeException e) {
                return "";
            }
        }

        /**
         * JSON naming the view whose text is being parsed (Spark parses it with the view as the
         * current origin) and the catalog and namespace it was created in, where its names
         * resolve; "{}" when unknown (a temporary view, another catalog).
         */
        static String context(SparkSession session) {
            com.fasterxml.jackson.databind.node.ObjectNode json =
                new com.fasterxml.jackson.databind.ObjectMapper().createObjectNode();
            try {
                Origin origin = CurrentOrigin.get();
                if (origin.objectType().isEmpty() || !"VIEW".equals(origin.objectType().get())
                        || origin.objectName().isEmpty()) {
                    return json.toString();
                }
                String name = origin.objectName().get();
                json.put("view", name);
                String[] parts = name.split("\\.", -1);
                if (parts.length != 3 || !(session instanceof org.apache.spark.sql.classic.SparkSession)) {
                    return json.toString();
                }
                org.apache.spark.sql.catalyst.catalog.SessionCatalog catalog =
                    ((org.apache.spark.sql.classic.SparkSession) session).sessionState().catalog();
                if (!parts[0].equalsIgnoreCase(org.apache.spark.sql.connector.catalog.CatalogManager
                        .SESSION_CATALOG_NAME())) {
                    return json.toString();
                }
                CatalogTable table = catalog.externalCatalog().getTable(parts[1], parts[2]);
                Seq<String> namespace = table.viewCatalogAndNamespace();
                if (!namespace.isEmpty()) {
                    com.fasterxml.jackson.databind.node.ArrayNode array = json.putArray("namespace");
                    scala.collection.Iterator<String> each = namespace.iterator();
                    while (each.hasNext()) {
                        array.add(each.next());
                    }
                }
            } catch (RuntimeException e) {
                // names resolve in the reader's current namespace
            }
            return json.toString();
        }
    }

    /**
     * sparkseq's Python functions resolved as a plan is parsed. Each call of {@code seq_*},
     * {@code sparkseq_count} or a digest-named engine function ({@code sparkseq_agg_...}) that
     * the session has registered becomes the Python function's expression itself (an aggregate
     * as its aggregate expression), built by the session's own registry as the analyzer would.
     * The analyzer then never looks the name up, so no plan refers to a temporary function:
     * Spark allows such a plan in a persistent view, and reads it back there.
     */
    static final class Functions {
        /** Cheap test of a text before its plan is searched. */
        static final Pattern MENTIONED = Pattern.compile("(?i)\\b(?:seq|sparkseq)_");
        private static final Pattern NAME = Pattern.compile(
            "seq_(?:count|sum|avg|min|max)(?:_windows)?|seq_(?:steps|max_step)|sparkseq_[a-z0-9_]+");

        private Functions() {
        }

        /** {@code plan} with sparkseq's function calls resolved; {@code count[0]} adds how many. */
        static LogicalPlan resolve(SparkSession session, LogicalPlan plan, int[] count) {
            if (!(session instanceof org.apache.spark.sql.classic.SparkSession)) {
                return plan;
            }
            try {
                FunctionRegistry registry = ((org.apache.spark.sql.classic.SparkSession) session).sessionState()
                    .functionRegistry();
                return (LogicalPlan) plan.transformAllExpressionsWithSubqueries(
                    new AbstractPartialFunction<Expression, Expression>() {
                        @Override
                        public boolean isDefinedAt(Expression expression) {
                            return expression instanceof UnresolvedFunction;
                        }

                        @Override
                        public Expression apply(Expression expression) {
                            Expression built = build(registry, (UnresolvedFunction) expression);
                            if (built == null) {
                                return expression;
                            }
                            count[0]++;
                            return built;
                        }
                    });
            } catch (LinkageError | AssertionError | RuntimeException e) {
                return plan;  // another Spark's trees: the analyzer resolves the names (temporary functions)
            }
        }

        /** The call as the analyzer would resolve it, or null to leave it to the analyzer. */
        private static Expression build(FunctionRegistry registry, UnresolvedFunction call) {
            if (call.nameParts().size() != 1) {
                return null;
            }
            String name = call.nameParts().head().toLowerCase(Locale.ROOT);
            if (!NAME.matcher(name).matches() || !plain(call)) {
                return null;
            }
            try {
                Option<Function1<Seq<Expression>, Expression>> builder = builder(registry, name);
                if (builder.isEmpty()) {
                    return null;
                }
                Expression built = builder.get().apply(call.arguments());
                if (!(built instanceof PythonFuncExpression)) {
                    return null;
                }
                return built instanceof AggregateFunction ? ((AggregateFunction) built).toAggregateExpression() : built;
            } catch (Exception e) {  // e.g. a wrong number of arguments: the analyzer reports it
                return null;
            }
        }

        /**
         * The session's temporary function {@code name}: kept under {@code system.session.name}
         * (Spark 4.2 and later, whose registry takes only such three-part names) or under the
         * bare name (Spark 4.1).
         */
        private static Option<Function1<Seq<Expression>, Expression>> builder(FunctionRegistry registry,
                                                                              String name) {
            FunctionIdentifier[] keys = {
                new FunctionIdentifier(name, new Some<String>("session"), new Some<String>("system")),
                new FunctionIdentifier(name)};
            for (FunctionIdentifier key : keys) {
                try {
                    Option<Function1<Seq<Expression>, Expression>> found = registry.lookupFunctionBuilder(key);
                    if (found.isDefined()) {
                        return found;
                    }
                } catch (AssertionError | RuntimeException e) {
                    // this Spark keys its registry the other way
                }
            }
            return Option.empty();
        }

        /**
         * A call without DISTINCT, FILTER, IGNORE NULLS, WITHIN GROUP or the like: every field
         * after the name and the arguments at its neutral value (false, None, empty), whatever
         * fields this Spark version's UnresolvedFunction has.
         */
        private static boolean plain(UnresolvedFunction call) {
            scala.collection.Iterator<Object> fields = call.productIterator();
            for (int i = 0; fields.hasNext(); i++) {
                Object value = fields.next();
                if (i < 2) {
                    continue;
                }
                boolean neutral = Boolean.FALSE.equals(value)
                    || (value instanceof Option && (((Option<?>) value).isEmpty()
                        || Boolean.FALSE.equals(((Option<?>) value).get())))
                    || (value instanceof scala.collection.Iterable && ((scala.collection.Iterable<?>) value).isEmpty());
                if (!neutral) {
                    return false;
                }
            }
            return true;
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

        /** The text of an {@link #ORIGINS_COMMENT}: URL-safe base64 of UTF-8 JSON; "" when it is not. */
        static String decoded(String text) {
            try {
                return new String(java.util.Base64.getUrlDecoder().decode(text.trim()),
                    java.nio.charset.StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                return "";  // parse() finds no places: errors quote no generated SQL
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
