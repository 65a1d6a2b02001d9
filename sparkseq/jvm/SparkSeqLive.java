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
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The live operator in the JVM: a MATCH_AGGREGATE over a streaming source kept per partition
 * key in Spark's state store by {@code groupBy(key).as(...).flatMapGroupsWithState} (Spark's
 * public stateful streaming API), so that no row of the stream travels to a Python worker.
 *
 * <p>sparkseq/running/live.py builds its input, one row per event: {@code key} (the partition key as
 * one canonical string), the event-time column (it carries the watermark: Spark drops late
 * rows by it), {@code ts} and {@code mask} (BIGINT engine time and symbol bitmask) and, when
 * the plan reads one, the column {@code value} (BIGINT: an integer, or a DECIMAL of up to 18
 * digits as its unscaled integer; DOUBLE; or a wider DECIMAL as its plain text). Each event is
 * read into a small bean ({@link Event}) of the engine columns alone. The plan is the JVM path's
 * literal ({@link SparkSeqAggregates.Plan}, written by sql_rewrites/generation/jvm_path.py) plus
 * the live window: {@code within} and {@code slide}.
 *
 * <p>Emission, as the Python live operator's (udafs/kernels/incremental/live.py): with SLIDE, each window
 * {@code [k*slide, k*slide + within)} holding a row of the key is emitted once (append mode),
 * when the watermark passes its end, counted on its own rows by
 * {@link SparkSeqAggregates#measures} (rows of one window are never more than {@code within}
 * apart, so the window's count is the plan's count without WITHIN); rows older than every
 * unfinished window are dropped from the state. Without SLIDE (update mode), a running result
 * over the key's complete rows, emitted whenever it changed: counted incrementally over time
 * groups (COUNT(*) and COUNT(X); with WITHIN the rows of the last {@code within} keep their
 * chain counts). A row is complete when the watermark (ms) times 1000 is at or after its time.
 *
 * <p>State: one BINARY value per key, {@link #MAGIC}, the layout {@link #VERSION} byte, the
 * digest of the statement it was written for (sparkseq/running/live.py), then the layout's data
 * ({@link KeyState#toBytes}). State of another statement, of another layout version or of the
 * Python operator is refused with a message saying so, never read as if it were this one's.
 */
public final class SparkSeqLive {
    private SparkSeqLive() {}

    /** The first bytes of every state value this class writes. */
    static final byte[] MAGIC = "SQJL".getBytes(StandardCharsets.US_ASCII);
    /** The state layout this class writes and reads: 2 holds the rows as variable-length
     * integers (1 held them as fixed 8-byte fields and each value with its length). */
    public static final int VERSION = 2;

    /**
     * The live operator over {@code events} (see the class comment); {@code within}, {@code slide}
     * 0 when absent; {@code scale}, the scale of a DECIMAL value column that arrives as its text
     * (-1: none). The events are grouped by their {@code key} column as it is (no function
     * computes the key) and read into small beans ({@link Event}) of the engine columns alone,
     * never into generic rows.
     */
    public static Dataset<Row> operator(Dataset<Row> events, String plan, long within, long slide, String digest,
                                        int scale) {
        Window window = new Window(within == 0 ? null : within, slide == 0 ? null : slide);
        SparkSeqAggregates.Plan parsed = new SparkSeqAggregates.Plan(plan);
        if (window.slide == null && !window.countsOnly(parsed)) {
            throw new IllegalArgumentException("the JVM live operator counts COUNT(*) and COUNT(X) without SLIDE");
        }
        StructType result = (StructType) ((ArrayType) parsed.resultType()).elementType();
        StructType output = new StructType().add("key", DataTypes.StringType, false);
        for (StructField f : result.fields()) output = output.add(f);
        StructType state = new StructType().add("state", DataTypes.BinaryType, false);
        Class<? extends Event> kind = Event.kind(events.schema());
        Step step = new Step(plan, window, digest, scale, kind != Event.class);
        @SuppressWarnings("unchecked")
        Encoder<Event> values = (Encoder<Event>) (Encoder<?>) Encoders.bean(kind);
        return events.groupBy(events.col("key")).as(Encoders.STRING(), values).flatMapGroupsWithState(
            step, window.slide != null ? OutputMode.Append() : OutputMode.Update(), Encoders.row(state), Encoders.row(output),
            GroupStateTimeout.EventTimeTimeout());
    }

    /**
     * One event as the operator reads it: engine time and symbol mask (BIGINT; NULL takes part
     * in nothing), and in the subclasses the value column {@code value}: a BIGINT (an integer, or
     * a DECIMAL of up to 18 digits as its unscaled integer), a DOUBLE, or a wider DECIMAL as its
     * plain text. A bean, so that Spark's encoder fills it from the named columns alone (the
     * key and the event-time column, which the watermark needs, are never converted).
     */
    public static class Event implements Serializable {
        private Long ts;
        private Long mask;

        public Long getTs() { return ts; }
        public void setTs(Long ts) { this.ts = ts; }
        public Long getMask() { return mask; }
        public void setMask(Long mask) { this.mask = mask; }

        /** The value as {@link SparkSeqAggregates.Rows} holds it (null: none, or NULL). */
        Object value(int scale, int column) { return null; }

        /** The bean class that reads {@code schema}'s value column (by its type; none: {@link Event}). */
        static Class<? extends Event> kind(StructType schema) {
            for (StructField f : schema.fields()) {
                if (!f.name().equals("value")) continue;
                if (f.dataType() instanceof LongType) return LongEvent.class;
                if (f.dataType() instanceof DoubleType) return DoubleEvent.class;
                if (f.dataType() instanceof StringType) return DecimalTextEvent.class;
                throw new IllegalArgumentException("the JVM live operator reads a BIGINT, DOUBLE or STRING value column, "
                                                   + "not " + f.dataType().simpleString());
            }
            return Event.class;
        }
    }

    /** An event with a BIGINT value. */
    public static class LongEvent extends Event {
        private Long value;

        public Long getValue() { return value; }
        public void setValue(Long value) { this.value = value; }

        @Override Object value(int scale, int column) {
            return value == null ? null : column == 3 ? BigInteger.valueOf(value) : (Object) value; // 3: unscaled already
        }
    }

    /** An event with a DOUBLE value. */
    public static class DoubleEvent extends Event {
        private Double value;

        public Double getValue() { return value; }
        public void setValue(Double value) { this.value = value; }

        @Override Object value(int scale, int column) { return value; }
    }

    /** An event with a DECIMAL value of more than 18 digits, as its plain text ({@code CAST(d AS STRING)}). */
    public static class DecimalTextEvent extends Event {
        private String value;

        public String getValue() { return value; }
        public void setValue(String value) { this.value = value; }

        @Override Object value(int scale, int column) {
            return value == null ? null : new BigDecimal(value).setScale(scale).unscaledValue();
        }
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
        /** The rows held: arrival order until {@link #sort}, then time order. */
        SparkSeqAggregates.Rows rows = new SparkSeqAggregates.Rows();
        /** SLIDE: windows before this one were emitted (Long.MIN_VALUE: none yet). */
        long next = Long.MIN_VALUE;
        /** Running modes: the counts carried over the complete rows so far. */
        Running running;

        /** Keeps the rows {@code keep} says, in their order. */
        void retain(boolean[] keep) {
            SparkSeqAggregates.Rows r = rows;
            int j = 0;
            for (int i = 0; i < r.n; i++) {
                if (!keep[i]) continue;
                r.ts[j] = r.ts[i];
                r.mask[j] = r.mask[i];
                if (r.values != null) r.values[j] = r.values[i];
                j++;
            }
            if (r.values != null) Arrays.fill(r.values, j, r.n, null);
            r.n = j;
        }

        /** Sorts the rows by time (rows of one time keep their arrival order: {@code Rows.order}). */
        void sort() {
            SparkSeqAggregates.Rows r = rows;
            boolean sorted = true;
            for (int i = 1; i < r.n && sorted; i++) sorted = r.ts[i - 1] <= r.ts[i];
            if (sorted) return;
            int[] order = r.order();
            int size = Math.max(r.n, 1);
            long[] t = new long[size], m = new long[size];
            Object[] v = r.values == null ? null : new Object[size];
            for (int i = 0; i < r.n; i++) {
                t[i] = r.ts[order[i]];
                m[i] = r.mask[order[i]];
                if (v != null) v[i] = r.values[order[i]];
            }
            r.ts = t;
            r.mask = m;
            r.values = v;
        }

        boolean empty() { return rows.n == 0 && running == null; }

        /**
         * The state as bytes: {@link #MAGIC}, {@link #VERSION}, the digest (a 2-byte length and
         * UTF-8), {@link #next} (8 bytes), the number of rows (4 bytes), per row its time as the
         * zigzag varint of the step from the row before (the first: from 0) and its mask as a
         * varint, a byte saying whether values follow, the values ({@link #putValue}), a byte
         * saying whether {@link Running} counts follow, and those. Big-endian throughout.
         */
        byte[] toBytes(String digest) {
            SparkSeqAggregates.Rows r = rows;
            byte[] name = digest.getBytes(StandardCharsets.UTF_8);
            ByteBuffer out = ByteBuffer.allocate(64 + name.length + 20 * r.n + valueBytes() + runningBytes());
            out.put(MAGIC).put((byte) VERSION).putShort((short) name.length).put(name);
            out.putLong(next).putInt(r.n);
            long previous = 0;
            for (int i = 0; i < r.n; i++) {
                putVarLong(out, zigzag(r.ts[i] - previous));
                putVarLong(out, r.mask[i]);
                previous = r.ts[i];
            }
            out.put((byte) (r.values == null ? 0 : 1));
            for (int i = 0; r.values != null && i < r.n; i++) putValue(out, r.values[i]);
            out.put((byte) (running == null ? 0 : 1));
            if (running != null) running.write(out);
            return Arrays.copyOf(out.array(), out.position());
        }

        private int valueBytes() {
            SparkSeqAggregates.Rows r = rows;
            int size = 0;
            for (int i = 0; r.values != null && i < r.n; i++) {
                size += 1 + Integer.BYTES + (r.values[i] instanceof BigInteger b ? b.bitLength() / 8 + 1 : Long.BYTES + 2);
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
            SparkSeqAggregates.Rows r = state.rows;
            r.ts = new long[Math.max(n, 8)];
            r.mask = new long[Math.max(n, 8)];
            long previous = 0;
            for (int i = 0; i < n; i++) {
                previous += unzigzag(getVarLong(in));
                r.ts[i] = previous;
                r.mask[i] = getVarLong(in);
            }
            if (in.get() == 1) {
                r.values = new Object[Math.max(n, 8)];
                for (int i = 0; i < n; i++) r.values[i] = getValue(in);
            }
            r.n = n;
            if (in.get() == 1) state.running = Running.read(in);
            return state;
        }
    }

    /** The zigzag form of {@code v}: small magnitudes, either sign, as small unsigned numbers. */
    static long zigzag(long v) { return (v << 1) ^ (v >> 63); }

    static long unzigzag(long v) { return (v >>> 1) ^ -(v & 1); }

    /** {@code v} as an unsigned varint: 7 bits a byte, low bits first, the high bit saying more follow. */
    static void putVarLong(ByteBuffer out, long v) {
        while ((v & ~0x7FL) != 0) {
            out.put((byte) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.put((byte) v);
    }

    static long getVarLong(ByteBuffer in) {
        long v = 0;
        for (int shift = 0; ; shift += 7) {
            byte b = in.get();
            v |= (long) (b & 0x7F) << shift;
            if (b >= 0) return v;
        }
    }

    /** One value: a kind byte (0 NULL, 1 BIGINT as a zigzag varint, 2 DOUBLE, 3 an unscaled DECIMAL: length and
     * two's-complement bytes, 4 an unscaled DECIMAL that fits a BIGINT, as a zigzag varint), then its data. */
    static void putValue(ByteBuffer out, Object v) {
        if (v == null) {
            out.put((byte) 0);
        } else if (v instanceof Long x) {
            out.put((byte) 1);
            putVarLong(out, zigzag(x));
        } else if (v instanceof Double x) {
            out.put((byte) 2).putDouble(x);
        } else if (((BigInteger) v).bitLength() < Long.SIZE) {
            out.put((byte) 4);
            putVarLong(out, zigzag(((BigInteger) v).longValue()));
        } else {
            byte[] b = ((BigInteger) v).toByteArray();
            out.put((byte) 3).putInt(b.length).put(b);
        }
    }

    static Object getValue(ByteBuffer in) {
        byte kind = in.get();
        if (kind == 0) return null;
        if (kind == 1) return unzigzag(getVarLong(in));
        if (kind == 2) return in.getDouble();
        if (kind == 4) return BigInteger.valueOf(unzigzag(getVarLong(in)));
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
    static final class Step implements FlatMapGroupsWithStateFunction<String, Event, Row, Row> {
        private final String planText;
        private final Window window;
        private final String digest;
        private final int scale; // the DECIMAL value column's scale (-1: not a DECIMAL text)
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

        @Override public Iterator<Row> call(String key, Iterator<Event> events, GroupState<Row> state) {
            if (plan == null) {
                plan = new SparkSeqAggregates.Plan(planText);
                for (long bits : plan.elements) symbols |= bits;
                for (long bits : plan.negations) symbols |= bits;
            }
            KeyState keyState = state.exists() ? KeyState.fromBytes(state.get().getAs(0), digest) : new KeyState();
            SparkSeqAggregates.Rows rows = keyState.rows;
            while (events.hasNext()) {
                Event e = events.next();
                // a row of no pattern symbol takes part in nothing, not even in which windows exist
                if (e.getTs() == null || e.getMask() == null || (e.getMask() & symbols) == 0) continue;
                rows.add(e.getTs(), e.getMask(), e.value(scale, plan.column), valued);
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

        /** SLIDE: every window the watermark finished that holds a row, each counted on its own rows
         * (the held rows in time order: a window's are one range of them). */
        private void windows(String key, KeyState s, long completeBefore, List<Row> out) {
            long w = window.within, step = window.slide;
            long end = Math.floorDiv(completeBefore - w, step) + 1; // windows before this one are final
            SparkSeqAggregates.Rows r = s.rows;
            if (r.n == 0 || end <= s.next) return;
            s.sort();
            long k = Math.max(s.next, window.firstWindow(r.ts[0]));
            int lo = 0;
            while (k < end) {
                long start = k * step;
                while (lo < r.n && r.ts[lo] < start) lo++;
                if (lo == r.n) break;
                if (r.ts[lo] >= start + w) { // no row in window k: on to the first window holding row lo
                    k = Math.max(k + 1, window.firstWindow(r.ts[lo]));
                    continue;
                }
                int hi = lo;
                while (hi < r.n && r.ts[hi] < start + w) hi++;
                Object[] fields = new Object[plan.measures.length + 3];
                Object[] values = r.values == null ? new Object[hi - lo] : Arrays.copyOfRange(r.values, lo, hi);
                Object error = SparkSeqAggregates.measures(plan, Arrays.copyOfRange(r.ts, lo, hi),
                                                           Arrays.copyOfRange(r.mask, lo, hi), values, fields);
                out.add(row(key, start, start + w, error == null ? fields : failed(fields.length, error)));
                k++;
            }
            s.next = end;
            boolean[] keep = new boolean[r.n];
            for (int i = 0; i < r.n; i++) keep[i] = r.ts[i] >= end * step;
            s.retain(keep);
        }

        /** No SLIDE: the complete rows counted in time order; the running result emitted when it changed. */
        private void running(String key, KeyState s, long completeBefore, List<Row> out) {
            SparkSeqAggregates.Rows r = s.rows;
            boolean[] pending = new boolean[r.n];
            boolean any = false;
            for (int i = 0; i < r.n; i++) {
                pending[i] = r.ts[i] >= completeBefore;
                any |= !pending[i];
            }
            if (!any) return;
            s.sort();
            for (int i = 0; i < r.n; i++) pending[i] = r.ts[i] >= completeBefore;
            if (s.running == null) {
                int k = plan.elements.length;
                s.running = new Running(k, k * (k - 1) / 2);
            }
            Running run = s.running;
            for (int start = 0; start < r.n && !pending[start]; ) {
                int stop = start;
                while (stop < r.n && r.ts[stop] == r.ts[start]) stop++;
                run.seen = true;
                if (window.within == null) {
                    run.open(plan, r.mask, start, stop);
                } else {
                    run.within(plan, window.within, r.ts[start], r.mask, start, stop);
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
            return error[0] == null ? fields : failed(fields.length, error[0]);
        }

        private void save(KeyState s, GroupState<Row> state, long watermark) {
            if (s.empty()) {
                state.remove();
                return;
            }
            state.update(RowFactory.create((Object) s.toBytes(digest)));
            SparkSeqAggregates.Rows r = s.rows;
            if (r.n == 0) {
                return;
            }
            long first = Long.MAX_VALUE;
            for (int i = 0; i < r.n; i++) first = Math.min(first, r.ts[i]);
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

    /** The fields of a result row that failed: the error text, every other field NULL. */
    static Object[] failed(int size, Object error) {
        Object[] fields = new Object[size];
        fields[size - 1] = error;
        return fields;
    }

    /** An output row: the key, the window bounds and the contract's fields, as external values. */
    static Row row(String key, Long start, Long end, Object[] fields) {
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
