package sparkseq.jvm;

import java.io.Serializable;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.aggregate.ImperativeAggregate;
import org.apache.spark.sql.catalyst.expressions.aggregate.TypedImperativeAggregate;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.unsafe.types.UTF8String;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * The JVM path: the engine function of the common pattern shapes as a Catalyst
 * {@link TypedImperativeAggregate}, so that a key's rows never travel to a Python worker.
 *
 * <p>{@code sparkseq_jvm_aggregate(plan, ts, mask[, value])} is called once per PARTITION BY
 * group, as the Python engine function is (udafs/contract.py): {@code plan} is a string
 * literal (sql_rewrites/generation/jvm_path.py writes it), {@code ts} and {@code mask} the BIGINT time
 * and symbol bitmask of each row, {@code value} the one measure column (BIGINT, DOUBLE or
 * DECIMAL, whose unscaled integers are read). It returns the contract's
 * {@code ARRAY<STRUCT<window_start, window_end, m0 .. m{k-1}, error>>}: one row, the window
 * bounds NULL, the measures, and {@code error} NULL unless a value does not fit its type
 * (the message, with {@code {partition}} where the generated SQL splices the key).
 *
 * <p>Shapes (sql_rewrites/generation/jvm_path.py {@code jvm_shape} decides): SEQ of positive
 * elements (one row each), negations between two of them, with or without WITHIN;
 * COUNT(*) and COUNT(X) (a factor: X's positions), SUM, AVG, MIN and MAX of one column
 * from each row's pair count (the matches binding it to X, udafs/kernels/values/measures.py);
 * count type BIGINT, DECIMAL(38, 0) or DOUBLE (the exact value rounded once). Rows with
 * equal times never follow each other (SEMANTICS section 3). Without WITHIN, counts and
 * pair counts are prefix times suffix counts; WITHIN without negation counts by the
 * prefix-count recurrence, and with a negation, or for pair counts, by time blocks
 * ({@link #blocks}, as udafs/kernels/counting/within.py). Counting runs in exact {@code long}
 * arithmetic and again in {@link BigInteger} when an intermediate overflows (pair counts
 * and blocks always in BigInteger); only the final values are checked against their
 * types. DOUBLE sums add pair count times value over rows in time order, so they equal
 * the Python path's up to rounding, as any two orders do.
 */
public final class SparkSeqAggregates {
    private SparkSeqAggregates() {}

    /** The SQL name the session function is registered under. */
    public static final String FUNCTION = "sparkseq_jvm_aggregate";
    /** Where the partition key goes in an error message (udafs/contract.py PARTITION_SLOT). */
    static final String PARTITION_SLOT = "{partition}";
    private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
    private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);
    private static final BigInteger DECIMAL_MAX = BigInteger.TEN.pow(38).subtract(BigInteger.ONE);

    /**
     * One measure: its kind ({@code count_star}, {@code count}, {@code sum}, {@code avg},
     * {@code min}, {@code max}), a count's factor (COUNT(X): X's positions), the elements
     * that bind X, the two halves of its overflow message and, for AVG of a DECIMAL
     * column, Spark's rounding (places, digits of the sum) and that sum's message.
     */
    static final class Measure implements Serializable {
        final String kind;
        final long factor;
        final int[] positions;
        final String before;
        final String after;
        final int places;
        final int digits;
        final String sumBefore;
        final String sumAfter;

        Measure(JsonNode m) {
            kind = m.get("kind").asText();
            factor = m.get("factor").asLong();
            positions = new int[m.get("positions").size()];
            for (int i = 0; i < positions.length; i++) positions[i] = m.get("positions").get(i).asInt();
            before = m.get("overflow").get(0).asText();
            after = m.get("overflow").get(1).asText();
            places = m.get("places").asInt();
            digits = m.get("digits").asInt();
            sumBefore = m.get("sum_overflow").get(0).asText();
            sumAfter = m.get("sum_overflow").get(1).asText();
        }

        boolean counts() { return kind.equals("count_star") || kind.equals("count"); }
    }

    /** The plan literal, parsed: element bits, gap negations, window, count type, measures. */
    static final class Plan implements Serializable {
        final long[] elements;
        final long[] negations; // negations[i]: the gap before element i (0 < i < n); [0]: leading (SLIDE)
        /** The trailing negation (SLIDE only: within a window, after the last bound row). */
        final long trailing;
        final Long within;
        /** SLIDE s: windows [k·s, k·s + w), each counted on its own rows ({@link #slid}). */
        final Long slide;
        /** Every symbol of the pattern, positive or negated: a window holding one has a row. */
        final long patternMask;
        /** In one window: the latest time the first element may have, the earliest the last may
         * have (a leading or trailing negation's instances there); else the widest. */
        final long firstBy, lastFrom;
        /** The count type: 0 BIGINT, 1 DECIMAL(38, 0), 2 DOUBLE (rounded once from the exact value). */
        final int countType;
        final Measure[] measures;
        /** The value column's kind: 0 none, 1 BIGINT, 2 DOUBLE, 3 DECIMAL (its unscaled integers). */
        final int column;

        Plan(String text) {
            try {
                JsonNode root = new ObjectMapper().readTree(text);
                elements = longs(root.get("elements"));
                negations = longs(root.get("negations"));
                within = root.get("within").isNull() ? null : root.get("within").asLong();
                slide = root.get("slide").isNull() ? null : root.get("slide").asLong();
                trailing = root.get("trailing").asLong();
                patternMask = root.get("pattern_mask").asLong();
                firstBy = Long.MAX_VALUE;
                lastFrom = Long.MIN_VALUE;
                countType = switch (root.get("count_type").asText()) {
                    case "bigint" -> 0;
                    case "decimal" -> 1;
                    case "double" -> 2;
                    default -> throw new IllegalArgumentException("unknown count type "
                                                                  + root.get("count_type").asText());
                };
                column = switch (root.get("column").asText()) {
                    case "int" -> 1;
                    case "float" -> 2;
                    case "decimal" -> 3;
                    default -> 0;
                };
                List<Measure> out = new ArrayList<>();
                for (JsonNode m : root.get("measures")) out.add(new Measure(m));
                measures = out.toArray(new Measure[0]);
            } catch (Exception exc) {
                throw new IllegalArgumentException("sparkseq_jvm_aggregate: malformed plan literal: " + exc, exc);
            }
            if (elements.length < 1 || negations.length != elements.length) {
                throw new IllegalArgumentException("sparkseq_jvm_aggregate: a plan needs elements and one "
                                                   + "negation mask per element");
            }
            if (slide != null && (within == null || slide <= 0 || within <= 0)) {
                throw new IllegalArgumentException("sparkseq_jvm_aggregate: SLIDE needs a positive WITHIN and slide");
            }
        }

        /** The plan of one SLIDE window: no window of its own (its rows are the window's), the
         * first and last elements limited by the window's leading and trailing negations. */
        private Plan(Plan plan, long firstBy, long lastFrom) {
            elements = plan.elements;
            negations = plan.negations.clone();
            negations[0] = 0; // the edges are the limits now
            trailing = 0;
            within = null;
            slide = null;
            patternMask = plan.patternMask;
            countType = plan.countType;
            measures = plan.measures;
            column = plan.column;
            this.firstBy = firstBy;
            this.lastFrom = lastFrom;
        }

        Plan window(long firstBy, long lastFrom) { return new Plan(this, firstBy, lastFrom); }

        /** Whether the plan has a leading or trailing negation. */
        boolean edged() { return negations[0] != 0 || trailing != 0; }

        /** Whether a time may not bind the first or the last element ({@link #gate}). */
        boolean gated() { return firstBy != Long.MAX_VALUE || lastFrom != Long.MIN_VALUE; }

        /** {@code bits}: the element bits rows at {@code time} are instances of (the first and
         * last elements' cleared where the window's edge negations forbid them). */
        void gate(long[] bits, long time) {
            System.arraycopy(elements, 0, bits, 0, elements.length);
            if (time > firstBy) bits[0] = 0;
            if (time < lastFrom) bits[bits.length - 1] = 0;
        }

        private static long[] longs(JsonNode array) {
            long[] out = new long[array.size()];
            for (int i = 0; i < out.length; i++) out[i] = array.get(i).asLong();
            return out;
        }

        /** A measure's engine type (udafs/contract.py engine_type). */
        DataType type(Measure m, DataType count) {
            if (m.counts()) return count;
            if (column == 3) return DataTypes.createDecimalType(38, 0);
            if (m.kind.equals("avg") || column == 2) return DataTypes.DoubleType;
            return m.kind.equals("sum") ? count : DataTypes.LongType;
        }

        DataType resultType() {
            DataType count = countType == 1 ? DataTypes.createDecimalType(38, 0)
                : countType == 2 ? DataTypes.DoubleType : DataTypes.LongType;
            StructField[] fields = new StructField[measures.length + 3];
            fields[0] = DataTypes.createStructField("window_start", DataTypes.LongType, true);
            fields[1] = DataTypes.createStructField("window_end", DataTypes.LongType, true);
            for (int j = 0; j < measures.length; j++) {
                fields[j + 2] = DataTypes.createStructField("m" + j, type(measures[j], count), true);
            }
            fields[measures.length + 2] = DataTypes.createStructField("error", DataTypes.StringType, true);
            return DataTypes.createArrayType(DataTypes.createStructType(fields), false);
        }
    }

    /** A key's rows: times and masks in arrival order. */
    public static final class Rows implements Serializable {
        long[] ts = new long[8];
        long[] mask = new long[8];
        /** Values (only with a value column): NULL, a Long, a Double or a BigInteger (unscaled DECIMAL). */
        Object[] values;
        int n;

        void add(long t, long m, Object value, boolean valued) {
            if (n == ts.length) {
                ts = Arrays.copyOf(ts, 2 * n);
                mask = Arrays.copyOf(mask, 2 * n);
                if (values != null) values = Arrays.copyOf(values, 2 * n);
            }
            if (valued && values == null) values = new Object[ts.length];
            ts[n] = t;
            mask[n] = m;
            if (values != null) values[n] = value;
            n++;
        }

        static Rows merge(Rows a, Rows b) {
            Rows into = a.n >= b.n ? a : b, from = a.n >= b.n ? b : a;
            for (int i = 0; i < from.n; i++) {
                into.add(from.ts[i], from.mask[i], from.values == null ? null : from.values[i], from.values != null);
            }
            return into;
        }

        byte[] toBytes() {
            byte[][] encoded = new byte[values == null ? 0 : n][];
            int size = Integer.BYTES + 2 * Long.BYTES * n + 1;
            for (int i = 0; i < encoded.length; i++) {
                Object v = values[i];
                encoded[i] = v == null ? new byte[0]
                    : v instanceof Long x ? ByteBuffer.allocate(Long.BYTES).putLong(x).array()
                    : v instanceof Double x ? ByteBuffer.allocate(Long.BYTES).putDouble(x).array()
                    : ((BigInteger) v).toByteArray();
                size += 1 + Integer.BYTES + encoded[i].length;
            }
            ByteBuffer out = ByteBuffer.allocate(size);
            out.putInt(n);
            for (int i = 0; i < n; i++) out.putLong(ts[i]);
            for (int i = 0; i < n; i++) out.putLong(mask[i]);
            out.put((byte) (values == null ? 0 : 1));
            for (int i = 0; i < encoded.length; i++) {
                Object v = values[i];
                out.put((byte) (v == null ? 0 : v instanceof Long ? 1 : v instanceof Double ? 2 : 3));
                out.putInt(encoded[i].length);
                out.put(encoded[i]);
            }
            return out.array();
        }

        static Rows fromBytes(byte[] bytes) {
            ByteBuffer in = ByteBuffer.wrap(bytes);
            int n = in.getInt();
            Rows rows = new Rows();
            rows.ts = new long[Math.max(n, 1)];
            rows.mask = new long[Math.max(n, 1)];
            for (int i = 0; i < n; i++) rows.ts[i] = in.getLong();
            for (int i = 0; i < n; i++) rows.mask[i] = in.getLong();
            if (in.get() == 1) {
                rows.values = new Object[Math.max(n, 1)];
                for (int i = 0; i < n; i++) {
                    byte kind = in.get();
                    byte[] data = new byte[in.getInt()];
                    in.get(data);
                    rows.values[i] = kind == 0 ? null : kind == 1 ? (Object) ByteBuffer.wrap(data).getLong()
                        : kind == 2 ? (Object) ByteBuffer.wrap(data).getDouble() : new BigInteger(data);
                }
            }
            rows.n = n;
            return rows;
        }

        /**
         * Row indices in time order (a stable order does not matter: ties never chain), by one
         * primitive sort of (time, row) keys packed into a long: the time's offset from the
         * earliest when the span leaves room for the row bits, else its rank among the sorted
         * distinct times (one more primitive sort; a rank and a row index take 62 bits at
         * most). The ranks replace a sort of boxed indices with a comparator, which took most
         * of a one-key statement's time (a key spanning more than 2^(63 - log2 rows) µs: 5 M
         * rows over 3.5 days).
         */
        int[] order() {
            long lo = Long.MAX_VALUE, hi = Long.MIN_VALUE;
            for (int i = 0; i < n; i++) {
                lo = Math.min(lo, ts[i]);
                hi = Math.max(hi, ts[i]);
            }
            int shift = 64 - Long.numberOfLeadingZeros(Math.max(n - 1, 1));
            long span = n == 0 ? 0 : hi - lo; // negative when the span overflows
            long[] keys = new long[n];
            if (span >= 0 && span < (1L << (63 - shift))) {
                for (int i = 0; i < n; i++) keys[i] = ((ts[i] - lo) << shift) | i;
            } else {
                long[] times = Arrays.copyOf(ts, n);
                Arrays.sort(times);
                int distinct = 0;
                for (int i = 0; i < n; i++) if (distinct == 0 || times[distinct - 1] != times[i]) times[distinct++] = times[i];
                for (int i = 0; i < n; i++) keys[i] = ((long) Arrays.binarySearch(times, 0, distinct, ts[i]) << shift) | i;
            }
            Arrays.sort(keys);
            int[] order = new int[n];
            long low = (1L << shift) - 1;
            for (int i = 0; i < n; i++) order[i] = (int) (keys[i] & low);
            return order;
        }
    }

    // --- counting ------------------------------------------------------------------------

    /** Whether {@code later - earlier >= w} (later >= earlier; exact for any span). */
    static boolean expired(long earlier, long later, long w) {
        return Long.compareUnsigned(later - earlier, w) >= 0;
    }

    /** COUNT(*) of the plan over rows sorted by time, exactly. */
    static BigInteger count(Plan plan, long[] t, long[] mask) {
        BigInteger ignoringEdges = plan.within != null && negated(plan) ? blocks(plan, t, mask, null)
                                                                        : positive(plan, t, mask);
        return plan.within != null && plan.edged() ? ignoringEdges.add(edges(plan, t, mask, null, null)) : ignoringEdges;
    }

    /** COUNT(*) by the prefix DP (no window) or the prefix-count recurrence (WITHIN without a
     * middle negation), edge negations aside: in long arithmetic, again in BigInteger on overflow. */
    static BigInteger positive(Plan plan, long[] t, long[] mask) {
        try {
            return BigInteger.valueOf(plan.within == null ? countOpen(plan, t, mask) : countWithin(plan, t, mask));
        } catch (ArithmeticException overflow) {
            return plan.within == null ? countOpenExact(plan, t, mask) : countWithinExact(plan, t, mask);
        }
    }

    /**
     * Without a window: prefix counts over time groups. {@code live[i]}: the partial
     * matches of elements 0..i ending at an earlier time that no negation of the gap after
     * element i has cut since (a negation at time x cuts those ending before x).
     */
    static long countOpen(Plan plan, long[] t, long[] mask) {
        long[] bits = plan.elements.clone(), neg = plan.negations;
        boolean gated = plan.gated();
        int k = bits.length, n = t.length;
        long[] live = new long[k], added = new long[k];
        long total = 0;
        for (int start = 0; start < n; ) {
            int end = start;
            while (end < n && t[end] == t[start]) end++;
            if (gated) plan.gate(bits, t[start]);
            Arrays.fill(added, 0);
            long seen = 0;
            for (int r = start; r < end; r++) {
                long m = mask[r];
                seen |= m;
                if ((m & bits[0]) != 0) added[0]++;
                for (int i = 1; i < k; i++) {
                    if ((m & bits[i]) != 0) added[i] = Math.addExact(added[i], live[i - 1]);
                }
            }
            total = Math.addExact(total, added[k - 1]);
            for (int i = 0; i < k - 1; i++) {
                if ((seen & neg[i + 1]) != 0) live[i] = 0;
                live[i] = Math.addExact(live[i], added[i]);
            }
            start = end;
        }
        return total;
    }

    static BigInteger countOpenExact(Plan plan, long[] t, long[] mask) {
        long[] bits = plan.elements.clone(), neg = plan.negations;
        boolean gated = plan.gated();
        int k = bits.length, n = t.length;
        BigInteger[] live = new BigInteger[k], added = new BigInteger[k];
        Arrays.fill(live, BigInteger.ZERO);
        BigInteger total = BigInteger.ZERO;
        for (int start = 0; start < n; ) {
            int end = start;
            while (end < n && t[end] == t[start]) end++;
            if (gated) plan.gate(bits, t[start]);
            Arrays.fill(added, BigInteger.ZERO);
            long seen = 0;
            for (int r = start; r < end; r++) {
                long m = mask[r];
                seen |= m;
                if ((m & bits[0]) != 0) added[0] = added[0].add(BigInteger.ONE);
                for (int i = 1; i < k; i++) {
                    if ((m & bits[i]) != 0) added[i] = added[i].add(live[i - 1]);
                }
            }
            total = total.add(added[k - 1]);
            for (int i = 0; i < k - 1; i++) {
                if ((seen & neg[i + 1]) != 0) live[i] = BigInteger.ZERO;
                live[i] = live[i].add(added[i]);
            }
            start = end;
        }
        return total;
    }

    /**
     * WITHIN w, no negation: the prefix-count recurrence (the
     * removed window-function path's, in exact long arithmetic).
     * {@code c[a][b](r)}: chains of elements a..b ending at row r; {@code before}: their
     * sums over rows of an earlier time, {@code early}: over rows at least w earlier. The
     * chains a..k-1 ending at r within the window, {@code g[a]}, are all such chains less
     * those whose last expired row is element i's: early[a][i] * g[i + 1].
     */
    static long countWithin(Plan plan, long[] t, long[] mask) {
        long[] bits = plan.elements;
        long w = plan.within;
        int n = t.length, k = bits.length, last = k - 2;
        if (k == 1) return countSingle(bits[0], mask);
        int[][] at = new int[k - 1][k - 1];
        int m = 0;
        for (int a = 0; a <= last; a++) for (int b = a; b <= last; b++) at[a][b] = m++;
        long[] chains = new long[Math.multiplyExact(n, m)];
        long[] before = new long[m], early = new long[m], g = new long[k];
        long total = 0;
        int expiredRows = 0;
        for (int start = 0; start < n; ) {
            int end = start;
            while (end < n && t[end] == t[start]) end++;
            while (expiredRows < start && expired(t[expiredRows], t[start], w)) {
                for (int v = 0; v < m; v++) early[v] = Math.addExact(early[v], chains[expiredRows * m + v]);
                expiredRows++;
            }
            for (int r = start; r < end; r++) {
                for (int a = 0; a <= last; a++) {
                    for (int b = a; b <= last; b++) {
                        if ((mask[r] & bits[b]) == 0) continue;
                        chains[r * m + at[a][b]] = a == b ? 1 : before[at[a][b - 1]];
                    }
                }
                if ((mask[r] & bits[k - 1]) == 0) continue;
                g[k - 1] = 1;
                for (int a = last; a >= 0; a--) {
                    long value = before[at[a][last]];
                    for (int i = a; i <= last; i++) {
                        value = Math.subtractExact(value, Math.multiplyExact(early[at[a][i]], g[i + 1]));
                    }
                    g[a] = value;
                }
                total = Math.addExact(total, g[0]);
            }
            for (int r = start; r < end; r++) {
                for (int v = 0; v < m; v++) before[v] = Math.addExact(before[v], chains[r * m + v]);
            }
            start = end;
        }
        return total;
    }

    static BigInteger countWithinExact(Plan plan, long[] t, long[] mask) {
        long[] bits = plan.elements;
        long w = plan.within;
        int n = t.length, k = bits.length, last = k - 2;
        if (k == 1) return BigInteger.valueOf(countSingle(bits[0], mask));
        int[][] at = new int[k - 1][k - 1];
        int m = 0;
        for (int a = 0; a <= last; a++) for (int b = a; b <= last; b++) at[a][b] = m++;
        BigInteger[] chains = new BigInteger[n * m];
        Arrays.fill(chains, BigInteger.ZERO);
        BigInteger[] before = new BigInteger[m], early = new BigInteger[m], g = new BigInteger[k];
        Arrays.fill(before, BigInteger.ZERO);
        Arrays.fill(early, BigInteger.ZERO);
        BigInteger total = BigInteger.ZERO;
        int expiredRows = 0;
        for (int start = 0; start < n; ) {
            int end = start;
            while (end < n && t[end] == t[start]) end++;
            while (expiredRows < start && expired(t[expiredRows], t[start], w)) {
                for (int v = 0; v < m; v++) early[v] = early[v].add(chains[expiredRows * m + v]);
                expiredRows++;
            }
            for (int r = start; r < end; r++) {
                for (int a = 0; a <= last; a++) {
                    for (int b = a; b <= last; b++) {
                        if ((mask[r] & bits[b]) == 0) continue;
                        chains[r * m + at[a][b]] = a == b ? BigInteger.ONE : before[at[a][b - 1]];
                    }
                }
                if ((mask[r] & bits[k - 1]) == 0) continue;
                g[k - 1] = BigInteger.ONE;
                for (int a = last; a >= 0; a--) {
                    BigInteger value = before[at[a][last]];
                    for (int i = a; i <= last; i++) value = value.subtract(early[at[a][i]].multiply(g[i + 1]));
                    g[a] = value;
                }
                total = total.add(g[0]);
            }
            for (int r = start; r < end; r++) {
                for (int v = 0; v < m; v++) before[v] = before[v].add(chains[r * m + v]);
            }
            start = end;
        }
        return total;
    }

    static long countSingle(long bits, long[] mask) {
        long c = 0;
        for (long m : mask) if ((m & bits) != 0) c++;
        return c;
    }

    /** Whether the plan negates a symbol between two of its elements. */
    static boolean negated(Plan plan) {
        for (int i = 1; i < plan.negations.length; i++) if (plan.negations[i] != 0) return true;
        return false;
    }

    /**
     * A leading or trailing negation under WITHIN without SLIDE (SEMANTICS section 3, rule 5),
     * as udafs/kernels/counting/edges.py: the change to the matches that ignore it (and, with
     * {@code positions}, to their pair counts in {@code pairs}). A leading {@code !N} is
     * violated by the matches whose last N before the first row, at tn, is within w of the
     * last row: exactly the matches inside the open interval (tn, tn + w) whose first row is
     * at or before the next N time (a window without WITHIN of its own, {@link Plan#window}).
     * A trailing one mirrors it: (tn - w, tn), the last row at or after the previous N time.
     * Matches violating both are subtracted twice and added back once: lead time n1, trail
     * time n2 with n1 < n2 < n1 + 2w, the interval (max(n1, n2 - w), min(n2, n1 + w)).
     */
    static BigInteger edges(Plan plan, long[] t, long[] mask, int[] positions, BigInteger[] pairs) {
        long w = plan.within;
        long[] lead = times(t, mask, plan.negations[0]), trail = times(t, mask, plan.trailing);
        BigInteger change = BigInteger.ZERO;
        for (int i = 0; i < lead.length; i++) {
            long next = i + 1 < lead.length ? lead[i + 1] : Long.MAX_VALUE;
            change = change.add(inside(plan, t, mask, lead[i], lead[i] + w, next, Long.MIN_VALUE, positions, pairs, -1));
        }
        for (int j = 0; j < trail.length; j++) {
            long previous = j > 0 ? trail[j - 1] : Long.MIN_VALUE;
            change = change.add(inside(plan, t, mask, trail[j] - w, trail[j], Long.MAX_VALUE, previous, positions, pairs, -1));
        }
        for (int i = 0, from = 0; i < lead.length; i++) {
            while (from < trail.length && trail[from] <= lead[i]) from++;
            long next = i + 1 < lead.length ? lead[i + 1] : Long.MAX_VALUE;
            for (int j = from; j < trail.length && trail[j] - lead[i] - w < w; j++) {  // n2 < n1 + 2w
                long lo = Math.max(lead[i], trail[j] - w), hi = Math.min(trail[j], lead[i] + w);
                long previous = j > 0 ? trail[j - 1] : Long.MIN_VALUE;
                change = change.add(inside(plan, t, mask, lo, hi, next, previous, positions, pairs, 1));
            }
        }
        return change;
    }

    /** The distinct times of rows with a bit of {@code bits}, ascending (rows in time order). */
    static long[] times(long[] t, long[] mask, long bits) {
        long[] out = new long[t.length];
        int n = 0;
        for (int r = 0; r < t.length; r++) {
            if ((mask[r] & bits) != 0 && (n == 0 || out[n - 1] != t[r])) out[n++] = t[r];
        }
        return Arrays.copyOf(out, n);
    }

    /** {@code sign} times the matches inside the open interval (lo, hi) with the first row at or
     * before {@code firstBy} and the last at or after {@code lastFrom}; with {@code positions},
     * their pair counts added into {@code pairs} with that sign. */
    static BigInteger inside(Plan plan, long[] t, long[] mask, long lo, long hi, long firstBy, long lastFrom,
                             int[] positions, BigInteger[] pairs, int sign) {
        int a = after(t, lo), b = Math.max(a, after(t, hi - 1));
        if (a == b) return BigInteger.ZERO;
        Plan window = plan.window(firstBy, lastFrom);
        long[] wt = Arrays.copyOfRange(t, a, b), wm = Arrays.copyOfRange(mask, a, b);
        if (positions != null) {
            BigInteger[] p = pairs(window, wt, wm, positions);
            for (int r = 0; r < p.length; r++) pairs[a + r] = sign > 0 ? pairs[a + r].add(p[r]) : pairs[a + r].subtract(p[r]);
        }
        BigInteger matches = count(window, wt, wm);
        return sign > 0 ? matches : matches.negate();
    }

    /** The first row (in time order) with a time above {@code time}. */
    static int after(long[] t, long time) {
        int lo = 0, hi = t.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (t[mid] <= time) lo = mid + 1; else hi = mid;
        }
        return lo;
    }

    // --- WITHIN by time blocks (udafs/kernels/counting/within.py) ---------------------------------------

    /**
     * WITHIN w by time blocks {@code [b·w, (b+1)·w)}, for what the prefix-count recurrence
     * cannot do: negations between elements, and pair counts. A match (span < w) lies in
     * one block, or its rows straddle exactly one boundary, cut between elements i and i+1
     * (elements 0..i in block b, i+1..k-1 in block b+1). A negation in that gap then splits
     * in two independent conditions: no instance after element i's row in block b, none
     * before element i+1's row in block b+1 (the gap's instances all lie in one of the two).
     * So the crossing matches of cut i are the sum over the left part's start rows a of
     * H(a), the left parts starting at a, times F(t_a + w), the right parts of block b+1
     * ending before t_a + w. Pair counts (when {@code pairs} is given: per position, its
     * rows' counts are added into it) come from a forward and a backward pass over each
     * part, the other part's weights at its far end. Returns the number of matches.
     */
    static BigInteger blocks(Plan plan, long[] t, long[] mask, BigInteger[][] pairs) {
        int n = t.length, k = plan.elements.length;
        long w = plan.within;
        BigInteger total = BigInteger.ZERO;
        for (int lo = 0; lo < n; ) {
            long b = Math.floorDiv(t[lo], w);
            int mid = lo;
            while (mid < n && Math.floorDiv(t[mid], w) == b) mid++;
            BigInteger[][] f = forward(plan, t, mask, lo, mid, 0, k - 1, null);
            for (BigInteger x : f[k - 1]) total = total.add(x);
            if (pairs != null) add(pairs, 0, lo, f, backward(plan, t, mask, lo, mid, 0, k - 1, null));
            int hi = mid;
            while (hi < n && Math.floorDiv(t[hi], w) == b + 1) hi++;
            for (int i = 0; i < k - 1 && hi > mid; i++) total = total.add(crossing(plan, t, mask, lo, mid, hi, i, pairs));
            lo = mid;
        }
        return total;
    }

    /** The matches cut between elements i and i+1 with the left part in rows [lo, mid), the right in [mid, hi). */
    static BigInteger crossing(Plan plan, long[] t, long[] mask, int lo, int mid, int hi, int i, BigInteger[][] pairs) {
        int k = plan.elements.length;
        long w = plan.within, neg = plan.negations[i + 1];
        BigInteger[] endLeft = null, startRight = null;
        if (neg != 0) {
            long last = Long.MIN_VALUE, first = Long.MAX_VALUE;
            boolean left = false, right = false;
            for (int r = lo; r < mid; r++) if ((mask[r] & neg) != 0) { last = t[r]; left = true; }
            for (int r = hi - 1; r >= mid; r--) if ((mask[r] & neg) != 0) { first = t[r]; right = true; }
            if (left) {
                endLeft = new BigInteger[mid - lo];
                for (int r = lo; r < mid; r++) endLeft[r - lo] = t[r] >= last ? BigInteger.ONE : BigInteger.ZERO;
            }
            if (right) {
                startRight = new BigInteger[hi - mid];
                for (int r = mid; r < hi; r++) startRight[r - mid] = t[r] <= first ? BigInteger.ONE : BigInteger.ZERO;
            }
        }
        BigInteger[][] h = backward(plan, t, mask, lo, mid, 0, i, endLeft);
        BigInteger[][] fr = forward(plan, t, mask, mid, hi, i + 1, k - 1, startRight);
        BigInteger[] ends = fr[k - 2 - i], starts = h[0];
        BigInteger[] f = new BigInteger[mid - lo]; // per start row a: right parts ending before t_a + w
        BigInteger sum = BigInteger.ZERO, total = BigInteger.ZERO;
        for (int a = lo, e = mid; a < mid; a++) {
            while (e < hi && !expired(t[a], t[e], w)) sum = sum.add(ends[e++ - mid]);
            f[a - lo] = sum;
            total = total.add(starts[a - lo].multiply(sum));
        }
        if (pairs == null) return total;
        add(pairs, 0, lo, forward(plan, t, mask, lo, mid, 0, i, f), h);
        BigInteger[] v = new BigInteger[hi - mid]; // per end row e: left parts starting after t_e - w
        BigInteger reach = BigInteger.ZERO;
        for (int a = lo; a < mid; a++) reach = reach.add(starts[a - lo]);
        for (int e = mid, a = lo; e < hi; e++) {
            while (a < mid && expired(t[a], t[e], w)) reach = reach.subtract(starts[a++ - lo]);
            v[e - mid] = reach;
        }
        add(pairs, i + 1, mid, fr, backward(plan, t, mask, mid, hi, i + 1, k - 1, v));
        return total;
    }

    /** {@code pairs[first + j][from + r] += f[j][r] * b[j][r]} for the positions pairs asks for. */
    static void add(BigInteger[][] pairs, int first, int from, BigInteger[][] f, BigInteger[][] b) {
        for (int j = 0; j < f.length; j++) {
            BigInteger[] into = pairs[first + j];
            if (into == null) continue;
            for (int r = 0; r < f[j].length; r++) {
                if (f[j][r].signum() != 0 && b[j][r].signum() != 0) {
                    into[from + r] = into[from + r].add(f[j][r].multiply(b[j][r]));
                }
            }
        }
    }

    /**
     * Over rows [lo, hi) in time order, elements first..last: {@code out[j][r - lo]}, the
     * partial matches of elements first..first+j ending at row r, a start at row r weighing
     * {@code start[r - lo]} (null: 1). Equal times never chain; a negation instance at time x
     * cuts the partial matches ending before x.
     */
    static BigInteger[][] forward(Plan plan, long[] t, long[] mask, int lo, int hi, int first, int last,
                                  BigInteger[] start) {
        long[] bits = plan.elements, neg = plan.negations;
        int m = last - first + 1;
        BigInteger[][] out = new BigInteger[m][hi - lo];
        BigInteger[] live = new BigInteger[m], added = new BigInteger[m];
        Arrays.fill(live, BigInteger.ZERO);
        for (int s = lo; s < hi; ) {
            int e = s;
            while (e < hi && t[e] == t[s]) e++;
            Arrays.fill(added, BigInteger.ZERO);
            long seen = 0;
            for (int r = s; r < e; r++) {
                seen |= mask[r];
                for (int j = 0; j < m; j++) {
                    BigInteger x = (mask[r] & bits[first + j]) == 0 ? BigInteger.ZERO
                        : j > 0 ? live[j - 1] : start == null ? BigInteger.ONE : start[r - lo];
                    out[j][r - lo] = x;
                    added[j] = added[j].add(x);
                }
            }
            for (int j = 0; j < m - 1; j++) {
                if ((seen & neg[first + j + 1]) != 0) live[j] = BigInteger.ZERO;
                live[j] = live[j].add(added[j]);
            }
            s = e;
        }
        return out;
    }

    /** The mirror of {@link #forward}: the partial matches of elements first+j..last starting
     * at row r, an end at row r weighing {@code end[r - lo]} (null: 1). */
    static BigInteger[][] backward(Plan plan, long[] t, long[] mask, int lo, int hi, int first, int last,
                                   BigInteger[] end) {
        long[] bits = plan.elements, neg = plan.negations;
        int m = last - first + 1;
        BigInteger[][] out = new BigInteger[m][hi - lo];
        BigInteger[] live = new BigInteger[m], added = new BigInteger[m];
        Arrays.fill(live, BigInteger.ZERO);
        for (int e = hi; e > lo; ) {
            int s = e - 1;
            while (s > lo && t[s - 1] == t[e - 1]) s--;
            Arrays.fill(added, BigInteger.ZERO);
            long seen = 0;
            for (int r = s; r < e; r++) {
                seen |= mask[r];
                for (int j = 0; j < m; j++) {
                    BigInteger x = (mask[r] & bits[first + j]) == 0 ? BigInteger.ZERO
                        : j < m - 1 ? live[j + 1] : end == null ? BigInteger.ONE : end[r - lo];
                    out[j][r - lo] = x;
                    added[j] = added[j].add(x);
                }
            }
            for (int j = 1; j < m; j++) {
                if ((seen & neg[first + j]) != 0) live[j] = BigInteger.ZERO;
                live[j] = live[j].add(added[j]);
            }
            e = s;
        }
        return out;
    }

    /**
     * Per row (in time order), the matches that bind it to an element of {@code positions}:
     * the sum over those elements j of F_j(r) * B_j(r), the partial matches of elements 0..j
     * ending at r times those of j..k-1 starting at r (no window: the two halves are
     * independent, and a negation only constrains the gap it stands in). With WITHIN, by
     * time blocks ({@link #blocks}).
     */
    static BigInteger[] pairs(Plan plan, long[] t, long[] mask, int[] positions) {
        if (plan.within != null) {
            int n = t.length;
            BigInteger[][] byPosition = new BigInteger[plan.elements.length][];
            for (int j : positions) {
                byPosition[j] = new BigInteger[n];
                Arrays.fill(byPosition[j], BigInteger.ZERO);
            }
            blocks(plan, t, mask, byPosition);
            BigInteger[] out = new BigInteger[n];
            Arrays.fill(out, BigInteger.ZERO);
            for (int j : positions) for (int r = 0; r < n; r++) out[r] = out[r].add(byPosition[j][r]);
            if (plan.edged()) edges(plan, t, mask, positions, out);
            return out;
        }
        long[] bits = plan.elements.clone(), neg = plan.negations;
        boolean gated = plan.gated();
        int k = bits.length, n = t.length;
        BigInteger[][] forward = new BigInteger[k][], backward = new BigInteger[k][];
        for (int j : positions) {
            forward[j] = new BigInteger[n];
            backward[j] = new BigInteger[n];
        }
        BigInteger[] live = new BigInteger[k], added = new BigInteger[k];
        Arrays.fill(live, BigInteger.ZERO);
        for (int start = 0; start < n; ) {  // prefixes, by time
            int end = start;
            while (end < n && t[end] == t[start]) end++;
            if (gated) plan.gate(bits, t[start]);
            Arrays.fill(added, BigInteger.ZERO);
            long seen = 0;
            for (int r = start; r < end; r++) {
                seen |= mask[r];
                for (int i = 0; i < k; i++) {
                    BigInteger f = (mask[r] & bits[i]) == 0 ? BigInteger.ZERO : i == 0 ? BigInteger.ONE : live[i - 1];
                    added[i] = added[i].add(f);
                    if (forward[i] != null) forward[i][r] = f;
                }
            }
            for (int i = 0; i < k - 1; i++) {
                if ((seen & neg[i + 1]) != 0) live[i] = BigInteger.ZERO;
                live[i] = live[i].add(added[i]);
            }
            start = end;
        }
        Arrays.fill(live, BigInteger.ZERO);
        for (int end = n; end > 0; ) {  // suffixes, backwards in time
            int start = end - 1;
            while (start > 0 && t[start - 1] == t[end - 1]) start--;
            if (gated) plan.gate(bits, t[start]);
            Arrays.fill(added, BigInteger.ZERO);
            long seen = 0;
            for (int r = start; r < end; r++) {
                seen |= mask[r];
                for (int i = 0; i < k; i++) {
                    BigInteger b = (mask[r] & bits[i]) == 0 ? BigInteger.ZERO : i == k - 1 ? BigInteger.ONE : live[i + 1];
                    added[i] = added[i].add(b);
                    if (backward[i] != null) backward[i][r] = b;
                }
            }
            for (int i = 1; i < k; i++) {
                if ((seen & neg[i]) != 0) live[i] = BigInteger.ZERO;
                live[i] = live[i].add(added[i]);
            }
            end = start;
        }
        BigInteger[] out = new BigInteger[n];
        for (int r = 0; r < n; r++) {
            BigInteger p = BigInteger.ZERO;
            for (int j : positions) p = p.add(forward[j][r].multiply(backward[j][r]));
            out[r] = p;
        }
        return out;
    }

    private static final BigInteger TWO_53 = BigInteger.ONE.shiftLeft(53);

    /** The value of one non-count measure over rows in time order, or null (NULL); an error text if it does not fit. */
    static Object measure(Plan plan, Measure m, long[] t, long[] mask, Object[] values, Object[] error) {
        BigInteger[] pairs = pairs(plan, t, mask, m.positions);
        BigInteger nn = BigInteger.ZERO, total = BigInteger.ZERO;
        double floatTotal = 0;
        Object extreme = null;
        boolean min = m.kind.equals("min"), extremes = min || m.kind.equals("max");
        for (int r = 0; r < pairs.length; r++) {
            Object v = values[r];
            if (v == null || pairs[r].signum() == 0) continue;
            nn = nn.add(pairs[r]);
            if (extremes) {
                if (extreme == null || (min ? compare(v, extreme) < 0 : compare(v, extreme) > 0)) extreme = v;
            } else if (v instanceof Double d) {
                if (d != 0) floatTotal += pairs[r].doubleValue() * d;
            } else {
                total = total.add(pairs[r].multiply(v instanceof Long x ? BigInteger.valueOf(x) : (BigInteger) v));
            }
        }
        if (nn.signum() == 0) return null;
        if (extremes && plan.column == 3) {  // a DECIMAL of up to 18 digits arrives as its unscaled BIGINT
            return decimal(extreme instanceof Long x ? BigInteger.valueOf(x) : (BigInteger) extreme);
        }
        if (extremes) return extreme;
        if (plan.column == 2) return m.kind.equals("avg") ? floatTotal / nn.doubleValue() : floatTotal;
        if (plan.column == 1) {
            if (m.kind.equals("avg")) {
                if (total.abs().compareTo(TWO_53) < 0 && nn.compareTo(TWO_53) < 0) {
                    return total.doubleValue() / nn.doubleValue();
                }
                return new java.math.BigDecimal(total).divide(new java.math.BigDecimal(nn),
                                                              new java.math.MathContext(40)).doubleValue();
            }
            return fitted(plan, m, total, error);
        }
        if (m.kind.equals("avg")) {  // Spark's decimal avg: the sum within its digits, then rounded half up
            if (total.abs().compareTo(BigInteger.TEN.pow(m.digits)) >= 0) {
                error[0] = m.sumBefore + digits(total) + m.sumAfter;
                return null;
            }
            BigInteger[] qr = total.abs().multiply(BigInteger.TEN.pow(m.places)).divideAndRemainder(nn);
            BigInteger q = qr[0].add(qr[1].shiftLeft(1).compareTo(nn) >= 0 ? BigInteger.ONE : BigInteger.ZERO);
            total = total.signum() < 0 ? q.negate() : q;
        }
        if (total.abs().compareTo(DECIMAL_MAX) > 0) {
            error[0] = m.before + digits(total) + m.after;
            return null;
        }
        return decimal(total);
    }

    /** Spark's order of values: numbers as numbers, doubles with -0.0 below 0.0 and NaN above +inf. */
    static int compare(Object a, Object b) {
        if (a instanceof Long x) return Long.compare(x, (Long) b);
        if (a instanceof Double x) return Double.compare(x, (Double) b);
        return ((BigInteger) a).compareTo((BigInteger) b);
    }

    static String digits(BigInteger value) {
        return Integer.toString(value.abs().toString().length());
    }

    static Decimal decimal(BigInteger value) {
        return Decimal.apply(new java.math.BigDecimal(value), 38, 0);
    }

    /** A count (or an integer sum) in the count type, or null with the error text set;
     * DOUBLE: the exact value rounded once (to nearest, as Python's float of an int). */
    static Object fitted(Plan plan, Measure m, BigInteger value, Object[] error) {
        if (plan.countType == 2) return value.doubleValue();
        boolean fits = plan.countType == 1 ? value.abs().compareTo(DECIMAL_MAX) <= 0
                                           : value.compareTo(LONG_MIN) >= 0 && value.compareTo(LONG_MAX) <= 0;
        if (!fits) {
            error[0] = m.before + digits(value) + m.after;
            return null;
        }
        return plan.countType == 1 ? decimal(value) : (Object) value.longValue();
    }

    /** The contract's result for one group: its measures, or the error of the first that does not fit. */
    static GenericArrayData result(Plan plan, Rows rows) {
        int[] order = rows.order();
        int n = order.length;
        long[] t = new long[n], mask = new long[n];
        Object[] values = new Object[n];
        for (int i = 0; i < n; i++) {
            t[i] = rows.ts[order[i]];
            mask[i] = rows.mask[order[i]];
            if (rows.values != null) values[i] = rows.values[order[i]];
        }
        if (plan.slide != null) return slid(plan, t, mask, values);
        Object[] fields = new Object[plan.measures.length + 3];
        Object error = measures(plan, t, mask, values, fields);
        return new GenericArrayData(new Object[] {error == null ? new GenericInternalRow(fields) : failed(plan, error)});
    }

    /** The measures of rows in time order into {@code fields} (from index 2); the error text of
     * the first that does not fit its type, else null. */
    static Object measures(Plan plan, long[] t, long[] mask, Object[] values, Object[] fields) {
        BigInteger matches = count(plan, t, mask);
        Object[] error = new Object[1];
        for (int j = 0; j < plan.measures.length && error[0] == null; j++) {
            Measure m = plan.measures[j];
            fields[j + 2] = m.counts() ? fitted(plan, m, matches.multiply(BigInteger.valueOf(m.factor)), error)
                                       : measure(plan, m, t, mask, values, error);
        }
        return error[0];
    }

    /** The one row of a group that failed: the error text, every other field NULL. */
    static GenericInternalRow failed(Plan plan, Object error) {
        Object[] fields = new Object[plan.measures.length + 3];
        fields[fields.length - 1] = UTF8String.fromString((String) error);
        return new GenericInternalRow(fields);
    }

    /**
     * SLIDE s: one row per window {@code [k·s, k·s + w)} holding a row of a pattern symbol
     * (SEMANTICS section 4), each counted on its own rows alone, as a plan without a window
     * ({@link Plan#window}): its leading negation's earliest instance in the window is the
     * latest time the first element may take, its trailing negation's latest the earliest
     * the last may. The windows and their row ranges advance with the rows, in time order.
     */
    static GenericArrayData slid(Plan plan, long[] t, long[] mask, Object[] values) {
        long w = plan.within, s = plan.slide, lead = plan.negations[0], trail = plan.trailing;
        int n = t.length;
        List<InternalRow> out = new ArrayList<>();
        long next = Long.MIN_VALUE;
        for (int r = 0, a = 0, b = 0; r < n; r++) {
            if ((mask[r] & plan.patternMask) == 0) continue;
            long last = Math.floorDiv(t[r], s);
            for (long k = Math.max(next, Math.floorDiv(t[r] - w, s) + 1); k <= last; k++) {
                long start = k * s, end = start + w;
                while (a < n && t[a] < start) a++;
                while (b < n && t[b] < end) b++;
                long firstBy = Long.MAX_VALUE, lastFrom = Long.MIN_VALUE;
                for (int i = a; i < b; i++) {
                    if ((mask[i] & lead) != 0) firstBy = Math.min(firstBy, t[i]);
                    if ((mask[i] & trail) != 0) lastFrom = Math.max(lastFrom, t[i]);
                }
                Object[] fields = new Object[plan.measures.length + 3];
                Object error = measures(plan.window(firstBy, lastFrom), Arrays.copyOfRange(t, a, b),
                                        Arrays.copyOfRange(mask, a, b), Arrays.copyOfRange(values, a, b), fields);
                if (error != null) return new GenericArrayData(new Object[] {failed(plan, error)});
                fields[0] = start;
                fields[1] = end;
                out.add(new GenericInternalRow(fields));
            }
            next = Math.max(next, last + 1);
        }
        return new GenericArrayData(out.toArray());
    }

    // --- the Catalyst aggregate --------------------------------------------------------------

    /** {@code sparkseq_jvm_aggregate(plan, ts, mask[, value])}: see the class comment. */
    public static final class Aggregate extends TypedImperativeAggregate<Rows> implements Serializable {
        private final List<Expression> arguments; // plan, ts, mask[, value]
        private final int mutableOffset, inputOffset;
        private transient Plan plan;

        public Aggregate(List<Expression> arguments, int mutableOffset, int inputOffset) {
            this.arguments = List.copyOf(arguments);
            this.mutableOffset = mutableOffset;
            this.inputOffset = inputOffset;
        }

        Plan plan() {
            if (plan == null) {
                Expression text = arguments.get(0);
                if (!text.foldable()) {
                    throw new IllegalArgumentException(FUNCTION + ": the plan must be a string literal");
                }
                plan = new Plan(text.eval(null).toString());
                if (arguments.size() != (plan.column == 0 ? 3 : 4)) {
                    throw new IllegalArgumentException(FUNCTION + ": the plan takes " + (plan.column == 0 ? 3 : 4)
                                                       + " arguments, got " + arguments.size());
                }
            }
            return plan;
        }

        @Override public Rows createAggregationBuffer() { return new Rows(); }
        @Override public Rows update(Rows rows, InternalRow input) {
            Object t = arguments.get(1).eval(input), m = arguments.get(2).eval(input);
            if (t == null || m == null) return rows;
            if (arguments.size() < 4) {
                rows.add((Long) t, (Long) m, null, false);
                return rows;
            }
            Object v = arguments.get(3).eval(input);
            if (v instanceof Decimal d) v = d.toJavaBigDecimal().unscaledValue();
            rows.add((Long) t, (Long) m, v, true);
            return rows;
        }
        @Override public Rows merge(Rows a, Rows b) { return Rows.merge(a, b); }
        @Override public Object eval(Rows rows) { return result(plan(), rows); }
        @Override public byte[] serialize(Rows rows) { return rows.toBytes(); }
        @Override public Rows deserialize(byte[] bytes) { return Rows.fromBytes(bytes); }
        @Override public int mutableAggBufferOffset() { return mutableOffset; }
        @Override public int inputAggBufferOffset() { return inputOffset; }
        @Override public ImperativeAggregate withNewMutableAggBufferOffset(int offset) {
            return new Aggregate(arguments, offset, inputOffset);
        }
        @Override public ImperativeAggregate withNewInputAggBufferOffset(int offset) {
            return new Aggregate(arguments, mutableOffset, offset);
        }
        @Override public boolean nullable() { return false; }
        @Override public DataType dataType() { return plan().resultType(); }
        @Override public Seq<Expression> children() { return CollectionConverters.asScala(arguments).toList(); }
        @Override public Expression withNewChildrenInternal(IndexedSeq<Expression> children) {
            return new Aggregate(CollectionConverters.asJava(children), mutableOffset, inputOffset);
        }
        @Override public int productArity() { return 3; }
        @Override public Object productElement(int i) {
            return switch (i) {
                case 0 -> children();
                case 1 -> mutableOffset;
                default -> inputOffset;
            };
        }
        @Override public boolean canEqual(Object other) { return other instanceof Aggregate; }
        @Override public String prettyName() { return FUNCTION; }
    }

    /** Registers {@link #FUNCTION} as a temporary function of {@code spark}. */
    public static void register(SparkSession spark) {
        spark.sessionState().functionRegistry().createOrReplaceTempFunction(FUNCTION,
            new AbstractFunction1<Seq<Expression>, Expression>() {
                @Override public Expression apply(Seq<Expression> args) {
                    if (args.length() < 3 || args.length() > 4) {
                        throw new IllegalArgumentException(FUNCTION + " takes (plan, ts, mask[, value]), got "
                                                           + args.length() + " arguments");
                    }
                    return new Aggregate(CollectionConverters.asJava(args), 0, 0);
                }
            }, "scala_udf");
    }
}
