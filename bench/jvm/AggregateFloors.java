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
 * The same aggregate with the counting done is sparkseq's own (sparkseq/jvm/SparkSeqAggregates.java),
 * which the bench times beside these. Compiled by the bench against the installed pyspark's jars; not part of sparkseq.
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
}
