package sparkseq.bench;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.aggregate.ImperativeAggregate;
import org.apache.spark.sql.catalyst.expressions.aggregate.TypedImperativeAggregate;
import org.apache.spark.sql.expressions.Aggregator;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import scala.Tuple2;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * The floors of three ways a JVM aggregate could count a partition's matches
 * (bench/jvm_floor.py): each gathers a key's (time, mask) rows, sorts the times and
 * returns the row count, so its cost is the aggregate's own plumbing, not the counting.
 *
 * <ul>
 *   <li>{@code floor_typed(ts, mask)}: a typed {@link Aggregator} registered with
 *       {@code functions.udaf} (Spark's ScalaAggregator: an encoder per input row);</li>
 *   <li>{@code floor_catalyst(ts, mask)}: a Catalyst {@link TypedImperativeAggregate}
 *       registered as a session function (reads the input columns directly);</li>
 *   <li>{@code floor_size(collect_list(struct(ts, mask)))}: a Java UDF over Spark's own
 *       collect_list.</li>
 * </ul>
 *
 * {@link Counting} is the Catalyst one with the exact count done ({@link #registerCounting}).
 * Compiled by the bench against the installed pyspark's jars; not part of sparkseq.
 */
public final class AggregateFloors {
    private AggregateFloors() {}

    /** A key's rows: times and masks in arrival order. */
    public static final class Rows implements Serializable {
        private long[] ts = new long[16];
        private long[] mask = new long[16];
        private int n;

        public Rows() {}

        // bean accessors: the typed Aggregator's buffer encoder
        public long[] getTs() { return Arrays.copyOf(ts, n); }
        public void setTs(long[] values) { ts = values; n = values.length; }
        public long[] getMask() { return Arrays.copyOf(mask, n); }
        public void setMask(long[] values) { mask = values; n = values.length; }

        void add(long t, long m) {
            if (n == ts.length) {
                ts = Arrays.copyOf(ts, 2 * n);
                mask = Arrays.copyOf(mask, 2 * n);
            }
            ts[n] = t;
            mask[n] = m;
            n++;
        }

        static Rows merge(Rows a, Rows b) {
            Rows into = a.n >= b.n ? a : b, from = a.n >= b.n ? b : a;
            for (int i = 0; i < from.n; i++) into.add(from.ts[i], from.mask[i]);
            return into;
        }

        /** The row count, after sorting the times (what any exact count needs first). */
        long sortedSize() {
            long[] order = Arrays.copyOf(ts, n);
            Arrays.sort(order);
            return order.length;
        }

        byte[] toBytes() {
            ByteBuffer out = ByteBuffer.allocate(Integer.BYTES + 2 * Long.BYTES * n);
            out.putInt(n);
            for (int i = 0; i < n; i++) out.putLong(ts[i]);
            for (int i = 0; i < n; i++) out.putLong(mask[i]);
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
            rows.n = n;
            return rows;
        }
    }

    /** Candidate (b): a typed Aggregator over (ts, mask) tuples. */
    public static final class Typed extends Aggregator<Tuple2<Long, Long>, Rows, Long> {
        @Override public Rows zero() { return new Rows(); }
        @Override public Rows reduce(Rows rows, Tuple2<Long, Long> row) {
            rows.add(row._1(), row._2());
            return rows;
        }
        @Override public Rows merge(Rows a, Rows b) { return Rows.merge(a, b); }
        @Override public Long finish(Rows rows) { return rows.sortedSize(); }
        @Override public Encoder<Rows> bufferEncoder() { return Encoders.bean(Rows.class); }
        @Override public Encoder<Long> outputEncoder() { return Encoders.LONG(); }
    }

    /** Candidate (c): a Catalyst aggregate reading its two BIGINT children itself. */
    public static final class Catalyst extends TypedImperativeAggregate<Rows> implements Serializable {
        private final Expression ts, mask;
        private final int mutableOffset, inputOffset;

        public Catalyst(Expression ts, Expression mask, int mutableOffset, int inputOffset) {
            this.ts = ts;
            this.mask = mask;
            this.mutableOffset = mutableOffset;
            this.inputOffset = inputOffset;
        }

        @Override public Rows createAggregationBuffer() { return new Rows(); }
        @Override public Rows update(Rows rows, InternalRow input) {
            Object t = ts.eval(input), m = mask.eval(input);
            if (t != null && m != null) rows.add((Long) t, (Long) m);
            return rows;
        }
        @Override public Rows merge(Rows a, Rows b) { return Rows.merge(a, b); }
        @Override public Object eval(Rows rows) { return rows.sortedSize(); }
        @Override public byte[] serialize(Rows rows) { return rows.toBytes(); }
        @Override public Rows deserialize(byte[] bytes) { return Rows.fromBytes(bytes); }
        @Override public int mutableAggBufferOffset() { return mutableOffset; }
        @Override public int inputAggBufferOffset() { return inputOffset; }
        @Override public ImperativeAggregate withNewMutableAggBufferOffset(int offset) {
            return new Catalyst(ts, mask, offset, inputOffset);
        }
        @Override public ImperativeAggregate withNewInputAggBufferOffset(int offset) {
            return new Catalyst(ts, mask, mutableOffset, offset);
        }
        @Override public boolean nullable() { return false; }
        @Override public DataType dataType() { return DataTypes.LongType; }
        @Override public Seq<Expression> children() { return CollectionConverters.asScala(List.of(ts, mask)).toList(); }
        @Override public Expression withNewChildrenInternal(IndexedSeq<Expression> children) {
            return new Catalyst(children.apply(0), children.apply(1), mutableOffset, inputOffset);
        }
        @Override public int productArity() { return 4; }
        @Override public Object productElement(int i) {
            return switch (i) {
                case 0 -> ts;
                case 1 -> mask;
                case 2 -> mutableOffset;
                default -> inputOffset;
            };
        }
        @Override public boolean canEqual(Object other) { return other instanceof Catalyst; }
        @Override public String prettyName() { return "floor_catalyst"; }
    }

    /**
     * Candidate (c) with the counting done: COUNT(*) of SEQ(S_0 .. S_{k-1}) WITHIN w per key
     * (element i matches rows whose mask has a bit of {@code bits[i]}), the prefix-count
     * recurrence of the JVM path (sparkseq/jvm/SparkSeqAggregates.java) in exact long arithmetic (an overflow raises).
     */
    public static final class Counting extends TypedImperativeAggregate<Rows> implements Serializable {
        private final Catalyst rows;
        private final long[] bits;
        private final long within;

        public Counting(Catalyst rows, long[] bits, long within) {
            this.rows = rows;
            this.bits = bits;
            this.within = within;
        }

        @Override public Rows createAggregationBuffer() { return new Rows(); }
        @Override public Rows update(Rows buffer, InternalRow input) { return rows.update(buffer, input); }
        @Override public Rows merge(Rows a, Rows b) { return Rows.merge(a, b); }
        @Override public Object eval(Rows buffer) { return count(buffer, bits, within); }
        @Override public byte[] serialize(Rows buffer) { return buffer.toBytes(); }
        @Override public Rows deserialize(byte[] bytes) { return Rows.fromBytes(bytes); }
        @Override public int mutableAggBufferOffset() { return rows.mutableAggBufferOffset(); }
        @Override public int inputAggBufferOffset() { return rows.inputAggBufferOffset(); }
        @Override public ImperativeAggregate withNewMutableAggBufferOffset(int offset) {
            return new Counting((Catalyst) rows.withNewMutableAggBufferOffset(offset), bits, within);
        }
        @Override public ImperativeAggregate withNewInputAggBufferOffset(int offset) {
            return new Counting((Catalyst) rows.withNewInputAggBufferOffset(offset), bits, within);
        }
        @Override public boolean nullable() { return false; }
        @Override public DataType dataType() { return DataTypes.LongType; }
        @Override public Seq<Expression> children() { return rows.children(); }
        @Override public Expression withNewChildrenInternal(IndexedSeq<Expression> children) {
            return new Counting((Catalyst) rows.withNewChildrenInternal(children), bits, within);
        }
        @Override public int productArity() { return 3; }
        @Override public Object productElement(int i) {
            return switch (i) {
                case 0 -> rows;
                case 1 -> Arrays.toString(bits);
                default -> within;
            };
        }
        @Override public boolean canEqual(Object other) { return other instanceof Counting; }
        @Override public String prettyName() { return "count_within"; }

        /** Rows sorted by time: (time, mask) pairs in two arrays. A primitive sort of
         *  (time - first) * 2^bits + row where that fits in 63 bits, else a boxed one. */
        static long[][] sorted(Rows buffer) {
            int n = buffer.n;
            long[] ts = buffer.ts;
            long lo = Long.MAX_VALUE, hi = Long.MIN_VALUE;
            for (int i = 0; i < n; i++) {
                lo = Math.min(lo, ts[i]);
                hi = Math.max(hi, ts[i]);
            }
            int shift = 64 - Long.numberOfLeadingZeros(Math.max(n - 1, 1));
            int[] order = new int[n];
            long span = n == 0 ? 0 : hi - lo;
            if (span >= 0 && span < (1L << (63 - shift))) {
                long[] keys = new long[n];
                for (int i = 0; i < n; i++) keys[i] = ((ts[i] - lo) << shift) | i;
                Arrays.sort(keys);
                long low = (1L << shift) - 1;
                for (int i = 0; i < n; i++) order[i] = (int) (keys[i] & low);
            } else {
                Integer[] boxed = new Integer[n];
                for (int i = 0; i < n; i++) boxed[i] = i;
                Arrays.sort(boxed, (x, y) -> Long.compare(ts[x], ts[y]));
                for (int i = 0; i < n; i++) order[i] = boxed[i];
            }
            long[] t = new long[n], m = new long[n];
            for (int i = 0; i < n; i++) {
                t[i] = ts[order[i]];
                m[i] = buffer.mask[order[i]];
            }
            return new long[][] {t, m};
        }

        static long count(Rows buffer, long[] bits, long w) {
            long[][] rows = sorted(buffer);
            long[] t = rows[0], mask = rows[1];
            int n = t.length, k = bits.length, last = k - 2;
            if (k == 1) {
                long c = 0;
                for (int r = 0; r < n; r++) if ((mask[r] & bits[0]) != 0) c++;
                return c;
            }
            int[][] at = new int[k - 1][k - 1];  // index of c[a][b] among a row's values
            int m = 0;
            for (int a = 0; a <= last; a++) for (int b = a; b <= last; b++) at[a][b] = m++;
            long[] chains = new long[n * m];      // c[a][b](r): chains S_a..S_b ending at row r
            long[] before = new long[m];          // sums of c over rows with a smaller time
            long[] early = new long[m];           // sums of c over rows with time <= t - w
            long[] g = new long[k];
            long total = 0;
            int expired = 0;
            for (int start = 0; start < n; ) {
                int end = start;
                while (end < n && t[end] == t[start]) end++;
                while (expired < start && t[expired] <= t[start] - w) {
                    for (int v = 0; v < m; v++) early[v] = Math.addExact(early[v], chains[expired * m + v]);
                    expired++;
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
    }

    /** Candidate (a): the size of collect_list's array of (ts, mask) structs. */
    public static final class Size implements UDF1<scala.collection.Seq<Row>, Long> {
        @Override public Long call(scala.collection.Seq<Row> rows) { return (long) rows.length(); }
    }

    /** Registers floor_typed, floor_catalyst and floor_size in {@code spark}. */
    public static void register(SparkSession spark) {
        spark.udf().register("floor_typed", functions.udaf(new Typed(), Encoders.tuple(Encoders.LONG(), Encoders.LONG())));
        spark.udf().register("floor_size", new Size(), DataTypes.LongType);
        spark.sessionState().functionRegistry().createOrReplaceTempFunction("floor_catalyst",
            new AbstractFunction1<Seq<Expression>, Expression>() {
                @Override public Expression apply(Seq<Expression> args) {
                    return new Catalyst(args.apply(0), args.apply(1), 0, 0);
                }
            }, "scala_udf");
    }

    /** Registers {@code name(ts, mask)}: COUNT(*) of SEQ over {@code bits} WITHIN {@code within} (a {@link Counting}). */
    public static void registerCounting(SparkSession spark, String name, long[] bits, long within) {
        spark.sessionState().functionRegistry().createOrReplaceTempFunction(name,
            new AbstractFunction1<Seq<Expression>, Expression>() {
                @Override public Expression apply(Seq<Expression> args) {
                    return new Counting(new Catalyst(args.apply(0), args.apply(1), 0, 0), bits, within);
                }
            }, "scala_udf");
    }
}
