package sparkseq.jvm;

import java.io.Serializable;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The live operator in the JVM: a MATCH_AGGREGATE over a streaming source kept per partition
 * key in Spark's state store by {@code groupByKey(key).flatMapGroupsWithState} (Spark's public
 * stateful streaming API), so that no row of the stream travels to a Python worker.
 *
 * <p>sparkseq/running/live.py builds its input, one row per event: {@code key} (the partition key as
 * one canonical string), the event-time column (it carries the watermark: Spark drops late
 * rows by it), {@code ts} and {@code mask} (BIGINT engine time and symbol bitmask) and, when
 * the plan reads one, the value column (BIGINT, DOUBLE or DECIMAL, whose unscaled integers are
 * read). The plan is the JVM path's literal ({@link SparkSeqAggregates.Plan}, written by
 * sql_rewrites/generation/jvm_path.py) plus the live window: {@code within} and {@code slide}.
 *
 * <p>Emission, as the Python live operator's (udafs/kernels/incremental/live.py): with SLIDE, each window
 * {@code [k*slide, k*slide + within)} holding a row of the key is emitted once (append mode),
 * when the watermark passes its end, counted on its own rows by
 * {@link SparkSeqAggregates#result} (rows of one window are never more than {@code within}
 * apart, so the window's count is the plan's count without WITHIN); rows older than every
 * unfinished window are dropped from the state. Without SLIDE (update mode), a running result
 * over the key's complete rows, emitted whenever it changed: counted incrementally over time
 * groups (COUNT(*) and COUNT(X); with WITHIN the rows of the last {@code within} keep their
 * chain counts). A row is complete when the watermark (ms) times 1000 is at or after its time.
 *
 * <p>State: one BINARY value per key, {@link #MAGIC}, the layout {@link #VERSION} byte, the
 * digest of the statement it was written for (sparkseq/running/live.py), then the layout's data. State
 * of another statement, of another layout version or of the Python operator is refused with a
 * message saying so, never read as if it were this one's.
 */
public final class SparkSeqLive {
    private SparkSeqLive() {}

    /** The first bytes of every state value this class writes. */
    static final byte[] MAGIC = "SQJL".getBytes(StandardCharsets.US_ASCII);
    /** The state layout this class writes and reads. */
    public static final int VERSION = 1;

    /** The live operator over {@code events} (see the class comment); {@code within}, {@code slide} 0 when absent. */
    public static Dataset<Row> operator(Dataset<Row> events, String plan, long within, long slide, String digest) {
        Window window = new Window(within == 0 ? null : within, slide == 0 ? null : slide);
        SparkSeqAggregates.Plan parsed = new SparkSeqAggregates.Plan(plan);
        if (window.slide == null && !window.countsOnly(parsed)) {
            throw new IllegalArgumentException("the JVM live operator counts COUNT(*) and COUNT(X) without SLIDE");
        }
        StructType input = events.schema();
        int scale = input.fields().length > 4 && input.fields()[4].dataType() instanceof DecimalType d ? d.scale() : -1;
        StructType result = (StructType) ((ArrayType) parsed.resultType()).elementType();
        StructType output = new StructType().add("key", DataTypes.StringType, false);
        for (StructField f : result.fields()) output = output.add(f);
        StructType state = new StructType().add("state", DataTypes.BinaryType, false);
        Step step = new Step(plan, window, digest, scale, input.fields().length > 4);
        return events.groupByKey(new KeyOf(), Encoders.STRING()).flatMapGroupsWithState(
            step, window.slide != null ? OutputMode.Append() : OutputMode.Update(), Encoders.row(state), Encoders.row(output),
            GroupStateTimeout.EventTimeTimeout());
    }

    /** The partition key of an input row (its first column). */
    static final class KeyOf implements MapFunction<Row, String> {
        @Override public String call(Row row) { return row.getString(0); }
    }

    /** WITHIN and SLIDE in engine units (null when absent). */
    static final class Window implements Serializable {
        final Long within;
        final Long slide;

        Window(Long within, Long slide) {
            if (slide != null && (within == null || slide <= 0 || within <= 0)) {
                throw new IllegalArgumentException("SLIDE needs a positive WITHIN and slide");
            }
            this.within = within;
            this.slide = slide;
        }

        boolean countsOnly(SparkSeqAggregates.Plan plan) {
            for (SparkSeqAggregates.Measure m : plan.measures) if (!m.counts()) return false;
            return true;
        }

        /** The first window {@code [k*slide, k*slide + within)} that holds time {@code t}. */
        long firstWindow(long t) { return Math.floorDiv(t - within, slide) + 1; }
    }

    // --- the state --------------------------------------------------------------------------

    /** One key's state: rows not yet complete or still in an unfinished window, and where emission stands. */
    static final class KeyState {
        long[] ts = new long[8];
        long[] mask = new long[8];
        Object[] values; // NULL, a Long, a Double or a BigInteger (unscaled DECIMAL); null without a value column
        int n;
        /** SLIDE: windows before this one were emitted (Long.MIN_VALUE: none yet). */
        long next = Long.MIN_VALUE;
        /** Running modes: the counts carried over the complete rows so far. */
        Running running;

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

        /** Keeps the rows {@code keep} says, in their order. */
        void retain(boolean[] keep) {
            int j = 0;
            for (int i = 0; i < n; i++) {
                if (!keep[i]) continue;
                ts[j] = ts[i];
                mask[j] = mask[i];
                if (values != null) values[j] = values[i];
                j++;
            }
            if (values != null) Arrays.fill(values, j, n, null);
            n = j;
        }

        /** Sorts the rows by time (rows of one time keep their arrival order). */
        void sort() {
            boolean sorted = true;
            for (int i = 1; i < n && sorted; i++) sorted = ts[i - 1] <= ts[i];
            if (sorted) return;
            int[] order = order(ts, n);
            long[] t = new long[Math.max(n, 1)], m = new long[Math.max(n, 1)];
            Object[] v = values == null ? null : new Object[Math.max(n, 1)];
            for (int i = 0; i < n; i++) {
                t[i] = ts[order[i]];
                m[i] = mask[order[i]];
                if (v != null) v[i] = values[order[i]];
            }
            ts = t;
            mask = m;
            values = v;
        }

        boolean empty() { return n == 0 && running == null; }

        /** Indices of {@code ts[0..n)} in time order, ties in index order: one primitive sort of
         * (time, index) keys when the span allows, else a sort of boxed indices. */
        static int[] order(long[] ts, int n) {
            long lo = Long.MAX_VALUE, hi = Long.MIN_VALUE;
            for (int i = 0; i < n; i++) {
                lo = Math.min(lo, ts[i]);
                hi = Math.max(hi, ts[i]);
            }
            int shift = 64 - Long.numberOfLeadingZeros(Math.max(n - 1, 1));
            int[] order = new int[n];
            long span = hi - lo; // negative when the span overflows
            if (span >= 0 && span < (1L << (63 - shift))) {
                long[] keys = new long[n];
                for (int i = 0; i < n; i++) keys[i] = ((ts[i] - lo) << shift) | i;
                Arrays.sort(keys);
                for (int i = 0; i < n; i++) order[i] = (int) (keys[i] & ((1L << shift) - 1));
                return order;
            }
            Integer[] boxed = new Integer[n];
            for (int i = 0; i < n; i++) boxed[i] = i;
            Arrays.sort(boxed, (x, y) -> Long.compare(ts[x], ts[y]));
            for (int i = 0; i < n; i++) order[i] = boxed[i];
            return order;
        }

        byte[] toBytes(String digest) {
            byte[] name = digest.getBytes(StandardCharsets.UTF_8);
            ByteBuffer out = ByteBuffer.allocate(64 + name.length + 16 * n + valueBytes() + runningBytes());
            out.put(MAGIC).put((byte) VERSION).putShort((short) name.length).put(name);
            out.putLong(next).putInt(n);
            for (int i = 0; i < n; i++) out.putLong(ts[i]).putLong(mask[i]);
            out.put((byte) (values == null ? 0 : 1));
            for (int i = 0; values != null && i < n; i++) putValue(out, values[i]);
            out.put((byte) (running == null ? 0 : 1));
            if (running != null) running.write(out);
            return Arrays.copyOf(out.array(), out.position());
        }

        private int valueBytes() {
            int size = 0;
            for (int i = 0; values != null && i < n; i++) {
                size += 1 + Integer.BYTES + (values[i] instanceof BigInteger b ? b.toByteArray().length : Long.BYTES);
            }
            return size;
        }

        private int runningBytes() { return running == null ? 0 : running.size(); }

        /** The state {@link #toBytes} wrote for {@code digest}; refuses any other. */
        static KeyState fromBytes(byte[] bytes, String digest) {
            ByteBuffer in = ByteBuffer.wrap(bytes);
            byte[] magic = new byte[MAGIC.length];
            if (bytes.length < MAGIC.length + 3 || !Arrays.equals(in.get(magic).array(), 0, MAGIC.length, MAGIC, 0,
                                                                        MAGIC.length)) {
                throw new IllegalStateException("the checkpoint holds state that sparkseq's JVM live operator did not "
                    + "write (the Python live operator's, or another stateful query's); a query restarted from a "
                    + "checkpoint must run on the same operator — start it with a new checkpoint location, or set "
                    + "sparkseq.path as the first run had it");
            }
            int version = in.get();
            if (version != VERSION) {
                throw new IllegalStateException("the checkpoint holds JVM live-operator state of layout version " + version
                    + "; this sparkseq reads layout version " + VERSION + " — start the query with a new checkpoint "
                    + "location (or run the sparkseq that wrote it)");
            }
            byte[] name = new byte[in.getShort()];
            in.get(name);
            String found = new String(name, StandardCharsets.UTF_8);
            if (!found.equals(digest)) {
                throw new IllegalStateException("the checkpoint holds state of a different MATCH_AGGREGATE, or of an "
                    + "earlier sparkseq whose state layout differs (state digest " + found + ", this query's " + digest
                    + "); a query restarted from a checkpoint must be the same statement — start a changed query "
                    + "with a new checkpoint location");
            }
            KeyState state = new KeyState();
            state.next = in.getLong();
            int n = in.getInt();
            state.ts = new long[Math.max(n, 1)];
            state.mask = new long[Math.max(n, 1)];
            for (int i = 0; i < n; i++) {
                state.ts[i] = in.getLong();
                state.mask[i] = in.getLong();
            }
            if (in.get() == 1) {
                state.values = new Object[Math.max(n, 1)];
                for (int i = 0; i < n; i++) state.values[i] = getValue(in);
            }
            state.n = n;
            if (in.get() == 1) state.running = Running.read(in);
            return state;
        }
    }

    static void putValue(ByteBuffer out, Object v) {
        if (v == null) {
            out.put((byte) 0);
        } else if (v instanceof Long x) {
            out.put((byte) 1).putLong(x);
        } else if (v instanceof Double x) {
            out.put((byte) 2).putDouble(x);
        } else {
            byte[] b = ((BigInteger) v).toByteArray();
            out.put((byte) 3).putInt(b.length).put(b);
        }
    }

    static Object getValue(ByteBuffer in) {
        byte kind = in.get();
        if (kind == 0) return null;
        if (kind == 1) return in.getLong();
        if (kind == 2) return in.getDouble();
        byte[] b = new byte[in.getInt()];
        in.get(b);
        return new BigInteger(b);
    }

    static void putBig(ByteBuffer out, BigInteger v) {
        byte[] b = v.toByteArray();
        out.putInt(b.length).put(b);
    }

    static BigInteger getBig(ByteBuffer in) {
        byte[] b = new byte[in.getInt()];
        in.get(b);
        return new BigInteger(b);
    }

    static int bigSize(BigInteger v) { return Integer.BYTES + v.bitLength() / 8 + 1; }

    // --- running results (no SLIDE) ---------------------------------------------------------

    /**
     * COUNT(*) over the complete rows of a key, carried from one time group to the next:
     * without WITHIN {@code live[i]}, the partial matches of elements 0..i ending at an earlier
     * time no negation has cut since ({@code SparkSeqAggregates.countOpen}); with WITHIN the
     * prefix-count recurrence of {@code SparkSeqAggregates.countWithin}, whose per-row chain
     * counts are kept only for rows not yet {@code within} older than the last time counted.
     * Counts are exact ({@link BigInteger}); the last emitted total is kept to emit on change.
     */
    static final class Running {
        BigInteger total = BigInteger.ZERO;
        BigInteger[] live;       // no WITHIN: per element
        BigInteger[] before;     // WITHIN: per chain (a, b), summed over counted rows
        BigInteger[] early;      // WITHIN: per chain, summed over rows expired for the last time counted
        long[] rowTs = new long[0];             // WITHIN: the rows not yet expired, in time order
        BigInteger[][] rowChains = new BigInteger[0][];
        boolean seen;            // a complete instance row has been counted
        BigInteger emitted;      // the total last emitted (null: none yet)

        Running(int k, int chains) {
            live = filled(k);
            before = filled(chains);
            early = filled(chains);
        }

        static BigInteger[] filled(int n) {
            BigInteger[] out = new BigInteger[n];
            Arrays.fill(out, BigInteger.ZERO);
            return out;
        }

        int size() {
            int s = 16 + bigSize(total) + (emitted == null ? 0 : bigSize(emitted));
            for (BigInteger[] part : new BigInteger[][] {live, before, early}) for (BigInteger v : part) s += bigSize(v);
            s += rowTs.length * Long.BYTES;
            for (BigInteger[] row : rowChains) for (BigInteger v : row) s += bigSize(v);
            return s + 64;
        }

        void write(ByteBuffer out) {
            putBig(out, total);
            out.put((byte) (seen ? 1 : 0)).put((byte) (emitted == null ? 0 : 1));
            if (emitted != null) putBig(out, emitted);
            out.putInt(live.length).putInt(before.length);
            for (BigInteger v : live) putBig(out, v);
            for (int i = 0; i < before.length; i++) {
                putBig(out, before[i]);
                putBig(out, early[i]);
            }
            out.putInt(rowTs.length);
            for (int r = 0; r < rowTs.length; r++) {
                out.putLong(rowTs[r]);
                for (BigInteger v : rowChains[r]) putBig(out, v);
            }
        }

        static Running read(ByteBuffer in) {
            BigInteger total = getBig(in);
            boolean seen = in.get() == 1, emitted = in.get() == 1;
            BigInteger last = emitted ? getBig(in) : null;
            int k = in.getInt(), chains = in.getInt();
            Running running = new Running(k, chains);
            running.total = total;
            running.seen = seen;
            running.emitted = last;
            for (int i = 0; i < k; i++) running.live[i] = getBig(in);
            for (int i = 0; i < chains; i++) {
                running.before[i] = getBig(in);
                running.early[i] = getBig(in);
            }
            int rows = in.getInt();
            running.rowTs = new long[rows];
            running.rowChains = new BigInteger[rows][];
            for (int r = 0; r < rows; r++) {
                running.rowTs[r] = in.getLong();
                running.rowChains[r] = new BigInteger[chains];
                for (int i = 0; i < chains; i++) running.rowChains[r][i] = getBig(in);
            }
            return running;
        }

        /** Counts one time group (rows {@code from..to} of {@code mask}, all at time {@code t}). */
        void open(SparkSeqAggregates.Plan plan, long[] mask, int from, int to) {
            long[] bits = plan.elements, neg = plan.negations;
            int k = bits.length;
            BigInteger[] added = filled(k);
            long seenMask = 0;
            for (int r = from; r < to; r++) {
                long m = mask[r];
                seenMask |= m;
                if ((m & bits[0]) != 0) added[0] = added[0].add(BigInteger.ONE);
                for (int i = 1; i < k; i++) if ((m & bits[i]) != 0) added[i] = added[i].add(live[i - 1]);
            }
            total = total.add(added[k - 1]);
            for (int i = 0; i < k - 1; i++) {
                if ((seenMask & neg[i + 1]) != 0) live[i] = BigInteger.ZERO;
                live[i] = live[i].add(added[i]);
            }
        }

        /** Counts one time group under WITHIN {@code w} (the recurrence of SparkSeqAggregates.countWithin). */
        void within(SparkSeqAggregates.Plan plan, long w, long t, long[] mask, int from, int to) {
            long[] bits = plan.elements;
            int k = bits.length, last = k - 2;
            if (k == 1) {
                for (int r = from; r < to; r++) if ((mask[r] & bits[0]) != 0) total = total.add(BigInteger.ONE);
                return;
            }
            int[][] at = chainIndex(k);
            int m = before.length, expired = 0;
            while (expired < rowTs.length && SparkSeqAggregates.expired(rowTs[expired], t, w)) {
                for (int v = 0; v < m; v++) early[v] = early[v].add(rowChains[expired][v]);
                expired++;
            }
            BigInteger[][] chains = new BigInteger[to - from][];
            BigInteger[] g = new BigInteger[k];
            for (int r = from; r < to; r++) {
                BigInteger[] c = filled(m);
                for (int a = 0; a <= last; a++) {
                    for (int b = a; b <= last; b++) {
                        if ((mask[r] & bits[b]) != 0) c[at[a][b]] = a == b ? BigInteger.ONE : before[at[a][b - 1]];
                    }
                }
                chains[r - from] = c;
                if ((mask[r] & bits[k - 1]) == 0) continue;
                g[k - 1] = BigInteger.ONE;
                for (int a = last; a >= 0; a--) {
                    BigInteger value = before[at[a][last]];
                    for (int i = a; i <= last; i++) value = value.subtract(early[at[a][i]].multiply(g[i + 1]));
                    g[a] = value;
                }
                total = total.add(g[0]);
            }
            for (BigInteger[] c : chains) for (int v = 0; v < m; v++) before[v] = before[v].add(c[v]);
            int kept = rowTs.length - expired, added = to - from;
            long[] ts = Arrays.copyOfRange(rowTs, expired, rowTs.length + added);
            BigInteger[][] rows = Arrays.copyOfRange(rowChains, expired, rowChains.length + added);
            for (int r = 0; r < added; r++) {
                ts[kept + r] = t;
                rows[kept + r] = chains[r];
            }
            rowTs = ts;
            rowChains = rows;
        }
    }

    /** The index of chain (a, b), 0 <= a <= b <= k - 2, as SparkSeqAggregates.countWithin numbers them. */
    static int[][] chainIndex(int k) {
        int[][] at = new int[Math.max(k - 1, 0)][Math.max(k - 1, 0)];
        int m = 0;
        for (int a = 0; a <= k - 2; a++) for (int b = a; b <= k - 2; b++) at[a][b] = m++;
        return at;
    }

    // --- one call per key and micro-batch ---------------------------------------------------

    /** The {@code flatMapGroupsWithState} function (class comment). */
    static final class Step implements FlatMapGroupsWithStateFunction<String, Row, Row, Row> {
        private final String planText;
        private final Window window;
        private final String digest;
        private final int scale; // the DECIMAL value column's scale (-1: not a DECIMAL)
        private final boolean valued;
        private transient SparkSeqAggregates.Plan plan;
        private transient long symbols; // the pattern's symbols, positive and negated

        Step(String planText, Window window, String digest, int scale, boolean valued) {
            this.planText = planText;
            this.window = window;
            this.digest = digest;
            this.scale = scale;
            this.valued = valued;
        }

        @Override public Iterator<Row> call(String key, Iterator<Row> rows, GroupState<Row> state) {
            if (plan == null) {
                plan = new SparkSeqAggregates.Plan(planText);
                for (long bits : plan.elements) symbols |= bits;
                for (long bits : plan.negations) symbols |= bits;
            }
            KeyState keyState = state.exists() ? KeyState.fromBytes(state.get().getAs(0), digest) : new KeyState();
            while (rows.hasNext()) {
                Row r = rows.next();
                // a row of no pattern symbol takes part in nothing, not even in which windows exist
                if (r.isNullAt(2) || r.isNullAt(3) || (r.getLong(3) & symbols) == 0) continue;
                Object value = null;
                if (valued && !r.isNullAt(4)) {
                    value = r.get(4);
                    if (value instanceof BigDecimal d) value = d.setScale(scale).unscaledValue();
                    if (value instanceof Long x && plan.column == 3) value = BigInteger.valueOf(x); // unscaled already
                }
                keyState.add(r.getLong(2), r.getLong(3), value, valued);
            }
            long watermark = state.getCurrentWatermarkMs();
            List<Row> out = new ArrayList<>();
            if (watermark > 0) {
                long completeBefore = watermark * 1000 + 1;
                if (window.slide != null) {
                    windows(key, keyState, completeBefore, out);
                } else {
                    running(key, keyState, completeBefore, out);
                }
            }
            save(keyState, state, watermark);
            return out.iterator();
        }

        /** SLIDE: every window the watermark finished that holds a row, each counted on its own rows. */
        private void windows(String key, KeyState s, long completeBefore, List<Row> out) {
            long w = window.within, step = window.slide;
            long end = Math.floorDiv(completeBefore - w, step) + 1; // windows before this one are final
            if (s.n == 0 || end <= s.next) return;
            s.sort();
            long k = Math.max(s.next, window.firstWindow(s.ts[0]));
            int lo = 0;
            while (k < end) {
                long start = k * step;
                while (lo < s.n && s.ts[lo] < start) lo++;
                if (lo == s.n) break;
                if (s.ts[lo] >= start + w) { // no row in window k: on to the first window holding row lo
                    k = Math.max(k + 1, window.firstWindow(s.ts[lo]));
                    continue;
                }
                int hi = lo;
                while (hi < s.n && s.ts[hi] < start + w) hi++;
                SparkSeqAggregates.Rows rows = new SparkSeqAggregates.Rows();
                for (int i = lo; i < hi; i++) rows.add(s.ts[i], s.mask[i], s.values == null ? null : s.values[i], valued);
                out.add(row(key, start, start + w, SparkSeqAggregates.result(plan, rows)));
                k++;
            }
            s.next = end;
            boolean[] keep = new boolean[s.n];
            for (int i = 0; i < s.n; i++) keep[i] = s.ts[i] >= end * step;
            s.retain(keep);
        }

        /** No SLIDE: the complete rows counted in time order; the running result emitted when it changed. */
        private void running(String key, KeyState s, long completeBefore, List<Row> out) {
            boolean[] pending = new boolean[s.n];
            boolean any = false;
            for (int i = 0; i < s.n; i++) {
                pending[i] = s.ts[i] >= completeBefore;
                any |= !pending[i];
            }
            if (!any) return;
            s.sort();
            for (int i = 0; i < s.n; i++) pending[i] = s.ts[i] >= completeBefore;
            if (s.running == null) {
                int k = plan.elements.length;
                s.running = new Running(k, k * (k - 1) / 2);
            }
            Running run = s.running;
            for (int start = 0; start < s.n && !pending[start]; ) {
                int stop = start;
                while (stop < s.n && s.ts[stop] == s.ts[start]) stop++;
                run.seen = true;
                if (window.within == null) {
                    run.open(plan, s.mask, start, stop);
                } else {
                    run.within(plan, window.within, s.ts[start], s.mask, start, stop);
                }
                start = stop;
            }
            s.retain(pending);
            if (run.seen && (run.emitted == null || !run.emitted.equals(run.total))) {
                run.emitted = run.total;
                out.add(row(key, null, null, counts(run.total)));
            }
        }

        /** The contract's result row of a running total: each measure a count, or the error. */
        private Object[] counts(BigInteger total) {
            Object[] fields = new Object[plan.measures.length + 3];
            Object[] error = new Object[1];
            for (int j = 0; j < plan.measures.length && error[0] == null; j++) {
                SparkSeqAggregates.Measure m = plan.measures[j];
                fields[j + 2] = SparkSeqAggregates.fitted(plan, m, total.multiply(BigInteger.valueOf(m.factor)), error);
            }
            if (error[0] == null) return fields;
            Object[] failed = new Object[fields.length];
            failed[fields.length - 1] = error[0];
            return failed;
        }

        private void save(KeyState s, GroupState<Row> state, long watermark) {
            if (s.empty()) {
                state.remove();
                return;
            }
            state.update(RowFactory.create((Object) s.toBytes(digest)));
            if (s.n == 0) {
                return;
            }
            long first = Long.MAX_VALUE;
            for (int i = 0; i < s.n; i++) first = Math.min(first, s.ts[i]);
            long due = first + 1; // without SLIDE: the least complete_before that counts a held row
            if (window.slide != null) { // with SLIDE: ... that emits a window
                due = Math.max(s.next, window.firstWindow(first)) * window.slide + window.within;
            }
            // complete_before = watermark * 1000 + 1 >= due once the watermark (ms) reaches
            // ceil((due - 1) / 1000); Spark times a key out once the watermark is strictly
            // greater than the timestamp set, and refuses one below the watermark.
            long at = -Math.floorDiv(-(due - 1), 1000) - 1;
            state.setTimeoutTimestamp(Math.max(Math.max(at, watermark), 1));
        }
    }

    /** An output row: the key, the window bounds and the contract's fields ({@code result}: {@link
     * SparkSeqAggregates#result}'s array of one row, or the fields themselves), as external values. */
    static Row row(String key, Long start, Long end, Object result) {
        Object[] fields;
        if (result instanceof Object[] plain) {
            fields = plain;
        } else {
            InternalRow internal = (InternalRow) ((GenericArrayData) result).array()[0];
            fields = new Object[internal.numFields()];
            for (int i = 0; i < fields.length; i++) fields[i] = internal.get(i, DataTypes.NullType);
        }
        Object[] out = new Object[fields.length + 1];
        out[0] = key;
        for (int i = 0; i < fields.length; i++) {
            Object v = fields[i];
            out[i + 1] = v instanceof Decimal d ? d.toJavaBigDecimal() : v instanceof UTF8String u ? u.toString() : v;
        }
        out[1] = start;
        out[2] = end;
        return RowFactory.create(out);
    }
}
