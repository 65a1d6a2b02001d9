"""Grouped Python aggregates (the ``seq_*`` functions) beside Spark's own, in one SELECT.

Spark runs a grouped-aggregate Python UDF only on its own: with another aggregate in
the same SELECT it fails (``INVALID_PANDAS_UDF_PLACEMENT``), it takes no ``FILTER``
or ``DISTINCT``, a call written again in HAVING or ORDER BY is not found, and over
empty input a global aggregate (no GROUP BY) returns no row, where SQL promises one.
BI tools write all of these. :func:`split_python_aggregates` rewrites such a SELECT,
as a pure tree-to-tree function, into the Python aggregates in one grouped query and
everything else in another, joined on the grouping keys::

    SELECT k, count(*) AS n, seq_count(ts, t, 'SEQ(a, b)') AS m FROM clicks WHERE x > 0
    GROUP BY k HAVING seq_count(ts, t, 'SEQ(a, b)') > count(*) ORDER BY m DESC

    SELECT __native.__n0 AS k, __native.__n1 AS n, __python.__p0 AS m
    FROM (SELECT k AS __k0, seq_count(ts, t, 'SEQ(a, b)') AS __p0
          FROM clicks WHERE x > 0 GROUP BY k) AS __python
    JOIN (SELECT k AS __k0, k AS __n0, count(*) AS __n1
          FROM clicks WHERE x > 0 GROUP BY k) AS __native
      ON __python.__k0 <=> __native.__k0
    WHERE __python.__p0 > __native.__n1
    ORDER BY m DESC

(internal names are really ``__sparkseq_*``). Both sides read the same rows and group
by the same keys, so every group is on both sides exactly once and the NULL-safe join
pairs them. Each side keeps the statement's FROM, joins, WHERE and GROUP BY as written
and every aliased non-aggregate SELECT item, so Spark resolves GROUP BY aliases,
ordinals (replaced by their item), lateral aliases and columns exactly as in the
original. The rest of the statement — operators and functions around the aggregates,
DISTINCT, ORDER BY, LIMIT — is evaluated over the joined groups; HAVING becomes its
WHERE. Unaliased items get the name Spark would have given them
(:mod:`sql_rewrites.syntax.column_names`).

* ``f(...) FILTER (WHERE c)`` of a Python aggregate becomes a masked input: its event
  time argument is ``CASE WHEN c THEN ts END`` (rows with a NULL time take part in
  nothing, exactly as if filtered out); no split is needed for that alone.
* Without GROUP BY the native side is one row whatever the input (a global aggregate,
  or ``SELECT 1`` when only Python aggregates are asked for), and the Python side is
  LEFT JOINed to it: over empty input counts are 0 and the other measures NULL.
* Refused with :class:`~sql_rewrites.errors.AggregatePlacementError` (before any
  Spark job): DISTINCT inside a Python aggregate, a Python aggregate nested in another
  aggregate, GROUPING SETS / ROLLUP / CUBE or ``*`` in a SELECT that needs the split,
  and a GROUP BY ordinal naming an aggregate.

A SELECT that Spark can run as written (Python aggregates alone in a grouped SELECT)
is left unchanged. The functions to treat as Python aggregates are an input
(:class:`PythonAggregate`), supplied by the Spark layer that registers them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NoReturn

from sqlglot import exp

from sql_rewrites.errors import AggregatePlacementError
from sql_rewrites.generation.generate import InternalNames
from sql_rewrites.syntax.column_names import spark_column_name
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.expressions import node_position


class OnEmpty(str, enum.Enum):
    """What a Python aggregate returns for a global aggregate over no rows."""

    ZERO = "zero"  # a count: 0
    NULL = "null"  # a sum, average, minimum or maximum: NULL
    EMPTY = "empty"  # a per-window array: no windows


@dataclass(frozen=True)
class PythonAggregate:
    """A grouped-aggregate Python function as the rewrite sees it.

    ``time_argument`` is the index of its event-time argument (a FILTER sets it to NULL
    on the rows it removes); ``on_empty`` its value over no rows.
    """

    name: str
    time_argument: int
    on_empty: OnEmpty


#: Spark aggregate functions that sqlglot reads as anonymous calls (it knows the others as
#: ``exp.AggFunc`` subclasses), so a SELECT mixing them with Python aggregates is split too.
#: tests/test_spark_aggregates.py checks that, with these, every aggregate in Spark's own
#: function registry is recognised.
SPARK_AGGREGATES = frozenset({
    "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or", "collect_list", "collect_set", "collect_union",
    "count_min_sketch", "every", "histogram_numeric", "hll_sketch_agg", "hll_union_agg", "listagg", "mode",
    "percentile", "regr_count", "some", "string_agg", "try_avg", "try_sum", "var_pop", "var_samp", "std",
    "stddev", "kurtosis", "skewness", "max_by", "min_by", "first_value", "last_value", "mean", "measure",
    "kll_sketch_agg_bigint", "kll_sketch_agg_double", "kll_sketch_agg_float", "kll_merge_agg_bigint",
    "kll_merge_agg_double", "kll_merge_agg_float", "theta_sketch_agg", "theta_union_agg", "theta_intersection_agg",
    "tuple_sketch_agg_integer", "tuple_sketch_agg_double", "tuple_union_agg_integer", "tuple_union_agg_double",
    "tuple_intersection_agg_integer", "tuple_intersection_agg_double",
})


def split_python_aggregates(tree: exp.Expr, functions: Mapping[str, PythonAggregate],
                            sql: str | None = None) -> tuple[exp.Expr, bool]:
    """``tree`` with every SELECT that needs it rewritten (module docstring), innermost
    first, and whether anything changed.

    Parameters
    ----------
    tree : sqlglot expression
        One parsed statement; changed in place (the result is ``tree`` unless the
        statement itself is such a SELECT).
    functions : mapping
        Lower-case function name -> :class:`PythonAggregate`.
    sql : str, optional
        The statement text, for error positions.

    Raises
    ------
    AggregatePlacementError
        For the forms listed in the module docstring.
    """
    changed = False
    for select in reversed(list(tree.find_all(exp.Select)) if functions else []):  # breadth-first: inner first
        split = _SelectSplit(select, functions, sql)
        rewritten = split.rewrite()
        changed = changed or split.changed
        if rewritten is not select:
            if select is tree:
                tree = rewritten
            else:
                select.replace(rewritten)
    return tree, changed


# --- one SELECT ------------------------------------------------------------------------


def _own_nodes(node: exp.Expr | None) -> Iterator[exp.Expr]:
    """Nodes of ``node`` that belong to its SELECT (not to subqueries inside it)."""
    if node is None:
        return iter(())
    return node.walk(prune=lambda n: n is not node and isinstance(n, (exp.Query, exp.Subquery)))


@dataclass
class _Parts:
    """Subexpressions moved into the two sides, by SQL text (identical ones computed once)."""

    python: dict[str, tuple[str, exp.Expr]] = field(default_factory=dict)
    native: dict[str, tuple[str, exp.Expr]] = field(default_factory=dict)


class _SelectSplit:
    """The split of one SELECT (see the module docstring)."""

    CLAUSES = ("expressions", "having", "order", "qualify")

    def __init__(self, select: exp.Select, functions: Mapping[str, PythonAggregate], sql: str | None) -> None:
        self.select = select
        self.functions = functions
        self.sql = sql
        self.changed = False  # set when the SELECT was rewritten (FILTER masked, or split)

    def rewrite(self) -> exp.Expr:
        calls = self._python_calls()
        if not calls:
            return self.select
        for call in calls:
            self._check(call)
        masked = self._mask_filters()
        if not self._needs_split():
            return masked
        self.changed = True
        return self._split(masked)

    # --- finding and checking --------------------------------------------------------

    def _python_calls(self) -> list[exp.Anonymous]:
        return [node for clause in self.CLAUSES for part in _parts_of(self.select, clause)
                for node in _own_nodes(part) if isinstance(node, exp.Anonymous) and self._is_python(node)]

    def _is_python(self, node: exp.Expr) -> bool:
        return isinstance(node, exp.Anonymous) and str(node.name).casefold() in self.functions

    def _check(self, call: exp.Anonymous) -> None:
        name = str(call.name)
        if any(isinstance(a, exp.Distinct) for a in call.expressions):
            self._fail(f"{name}(DISTINCT ...) is not supported: a pattern is matched over all rows of the group; "
                       f"remove DISTINCT (deduplicate the rows in a subquery if that is what you mean)", call)
        outer = call.parent
        while outer is not None and outer is not self.select:
            if self._is_python(outer) or self._is_native_aggregate(outer):
                self._fail(f"{name}(...) cannot stand inside another aggregate ({spark_column_name(outer)}); compute "
                           "it in a subquery and aggregate its result outside", call)
            outer = outer.parent

    def _mask_filters(self) -> exp.Select:
        """``f(ts, ...) FILTER (WHERE c)`` -> ``f(CASE WHEN c THEN ts END, ...)`` for Python
        aggregates; an unaliased SELECT item keeps the name of what was written."""
        for node in [n for clause in self.CLAUSES for part in _parts_of(self.select, clause)
                     for n in _own_nodes(part) if isinstance(n, exp.Filter) and self._is_python(n.this)]:
            call = node.this.copy()
            spec = self.functions[str(call.name).casefold()]
            arguments = call.expressions
            if spec.time_argument < len(arguments):
                time = arguments[spec.time_argument]
                arguments[spec.time_argument] = exp.case().when(node.expression.this.copy(), time.copy())
                call.set("expressions", arguments)
            if node.parent is self.select:  # an item of the select list
                call = exp.alias_(call, spark_column_name(node), quoted=True)
            node.replace(call)
            self.changed = True
        return self.select

    def _needs_split(self) -> bool:
        if self.select.args.get("group") is None:
            return True  # a global aggregate: one row even over no rows
        later = [n for clause in ("having", "order", "qualify") for part in _parts_of(self.select, clause)
                 for n in _own_nodes(part)]
        mine = [n for clause in self.CLAUSES for part in _parts_of(self.select, clause) for n in _own_nodes(part)]
        return any(self._is_python(n) for n in later) or any(self._is_native_aggregate(n) for n in mine)

    def _is_native_aggregate(self, node: exp.Expr) -> bool:
        return not self._is_python(node) and is_spark_aggregate(node)

    def _is_aggregate(self, node: exp.Expr) -> bool:
        return self._is_python(node) or self._is_native_aggregate(node)

    def _holds_aggregate(self, node: exp.Expr) -> bool:
        return any(self._is_python(n) or self._is_native_aggregate(n) for n in _own_nodes(node))

    # --- the split -------------------------------------------------------------------

    def _split(self, select: exp.Select) -> exp.Select:
        self._refuse_unsplittable(select)
        self.names = InternalNames(i.name for i in select.find_all(exp.Identifier))
        self.python_alias, self.native_alias = self.names("python"), self.names("native")
        select = self._inline_lateral_aliases(select.copy())
        keys = self._group_keys(select)
        grouped = {k.name.casefold() for k in keys if isinstance(k, exp.Column)}
        parts = _Parts()
        items = [exp.alias_(self._move(_unaliased(item), parts), spark_column_name(item), quoted=True)
                 for item in select.expressions]
        condition = None
        if select.args.get("having") is not None:
            aliases = {i.alias.casefold(): i.this for i in select.expressions if isinstance(i, exp.Alias)}
            having = _substitute(select.args["having"].this.copy(), aliases, grouped, self._is_aggregate)
            condition = self._move(having, parts)
        order = select.args.get("order")
        if order is not None:
            outputs = {spark_column_name(i).casefold() for i in select.expressions}
            order = order.copy()
            order.set("expressions", [self._move(o, parts, outputs) for o in order.expressions])
        return self._assemble(select, items, condition, order, keys, parts)

    def _refuse_unsplittable(self, select: exp.Select) -> None:
        group = select.args.get("group")
        found = group.find(exp.GroupingSets, exp.Rollup, exp.Cube) if group is not None else None
        if found is not None or (group is not None and (group.args.get("rollup") or group.args.get("cube"))):
            self._fail("GROUPING SETS, ROLLUP and CUBE cannot be used where seq_* functions stand beside other "
                       "aggregates or in HAVING / ORDER BY (the two kinds are joined on the grouping keys); compute "
                       "the seq_* functions in a query of their own and join it", found or group)
        for item in select.expressions:
            if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
                self._fail("SELECT * cannot be combined with seq_* functions beside other aggregates; name the "
                           "columns", item)

    def _inline_lateral_aliases(self, select: exp.Select) -> exp.Select:
        """A later item naming an earlier aggregate item's alias (``seq_count(...) AS n, n + 1``)
        gets that item's expression: the two end up on different sides of the split.
        Not inside aggregate calls, and not for grouped columns (Spark prefers columns)."""
        group = select.args.get("group")
        grouped = {k.name.casefold() for k in (group.expressions if group is not None else [])
                   if isinstance(k, exp.Column)}
        earlier: dict[str, exp.Expr] = {}
        items = []
        for item in select.expressions:
            item = _substitute(item, earlier, grouped, self._is_aggregate)
            if isinstance(item, exp.Alias) and self._holds_aggregate(item):
                earlier[item.alias.casefold()] = item.this
            items.append(item)
        select.set("expressions", items)
        return select

    def _group_keys(self, select: exp.Select) -> list[exp.Expr]:
        """The GROUP BY expressions, ordinals replaced by their SELECT item (``ALL``: the
        non-aggregate items), as written otherwise."""
        group = select.args.get("group")
        if group is None:
            return []
        if group.args.get("all"):
            return [_unaliased(i).copy() for i in select.expressions if not self._holds_aggregate(i)]
        keys = []
        for key in group.expressions:
            if isinstance(key, exp.Literal) and key.is_int:
                position = int(key.name)
                if not 1 <= position <= len(select.expressions):
                    self._fail(f"GROUP BY position {position} is not in the select list (1 to "
                               f"{len(select.expressions)})", key)
                item = select.expressions[position - 1]
                if self._holds_aggregate(item):
                    self._fail(f"GROUP BY position {position} refers to an aggregate, "
                               f"{spark_column_name(item)}", key)
                keys.append(_unaliased(item).copy())
            else:
                keys.append(key.copy())
        return keys

    def _move(self, node: exp.Expr, parts: _Parts, outputs: set[str] | None = None) -> exp.Expr:
        """``node`` for the outer query: Python calls, and the largest subexpressions free of
        them that read rows, become references to the two sides. ``outputs``: ORDER BY may
        name output columns, which the outer query has itself."""
        if self._is_python(node):
            return self._reference(node, parts.python, "p", self.python_alias)
        movable = isinstance(node, exp.Expr) and not isinstance(node, STRUCTURE) and not _is_window_function(node)
        if movable and not any(self._is_python(n) for n in _own_nodes(node)):
            if not _reads_rows(node):
                return node.copy()
            if not outputs or not _names(node, outputs):
                return self._reference(node, parts.native, "n", self.native_alias)
            if isinstance(node, exp.Column):
                return node.copy()
        node = node.copy()
        for child in list(node.iter_expressions()):
            child.replace(self._move(child, parts, outputs))
        return node

    def _reference(self, node: exp.Expr, side: dict[str, tuple[str, exp.Expr]], role: str,
                   table: str) -> exp.Expr:
        key = node.sql(dialect=SparkSeq)
        if key not in side:
            side[key] = (self.names(f"{role}{len(side)}"), node.copy())
        return exp.column(side[key][0], table=table, quoted=True)

    # --- assembling the outer query --------------------------------------------------

    def _assemble(self, select: exp.Select, items: list[exp.Expr], condition: exp.Expr | None,
                  order: exp.Order | None, keys: list[exp.Expr], parts: _Parts) -> exp.Select:
        key_names = [self.names(f"k{i}") for i in range(len(keys))]
        if keys:
            python_side = self._side(select, keys, key_names, parts.python.values())
        else:
            python_side = self._global_python_side(select, parts.python.values())
        native_values = list(parts.native.values())
        if keys:
            native_side = self._side(select, keys, key_names, native_values)
            on = exp.and_(*(exp.NullSafeEQ(this=exp.column(n, table=self.python_alias, quoted=True),
                                           expression=exp.column(n, table=self.native_alias, quoted=True))
                            for n in key_names))
            source = (exp.select(*items).from_(python_side.subquery(self.python_alias, copy=False))
                      .join(native_side.subquery(self.native_alias, copy=False), on=on, join_type="inner"))
        else:
            if native_values:
                native_side = self._side(select, [], [], native_values)
            else:  # only Python aggregates: the native side is one row, whatever the input
                native_side = exp.select(exp.alias_(exp.Literal.number(1), self.names("one"), quoted=True))
            items = [self._on_empty(i, parts) for i in items]
            condition = None if condition is None else self._on_empty(condition, parts)
            source = (exp.select(*items).from_(native_side.subquery(self.native_alias, copy=False))
                      .join(python_side.subquery(self.python_alias, copy=False), on=exp.true(), join_type="left"))
        if condition is not None:
            source.set("where", exp.Where(this=condition))
        for clause in ("with_", "distinct", "windows", "distribute", "sort", "cluster", "limit", "offset"):
            if select.args.get(clause) is not None:
                source.set(clause, select.args[clause].copy())
        if order is not None:
            source.set("order", order)
        return source

    def _side(self, select: exp.Select, keys: list[exp.Expr], key_names: list[str],
              values: Iterable[tuple[str, exp.Expr]]) -> exp.Select:
        """One grouped query: the statement's rows and groups, its aliased non-aggregate
        items (for GROUP BY aliases and lateral aliases), the keys and ``values``."""
        projections: list[exp.Expr] = [i.copy() for i in select.expressions
                       if isinstance(i, exp.Alias) and not self._holds_aggregate(i)
                       and not i.find(exp.Window, exp.Query, exp.Subquery)]
        projections += [exp.alias_(k.copy(), n, quoted=True) for k, n in zip(keys, key_names)]
        projections += [exp.alias_(v.copy(), n, quoted=True) for n, v in values]
        side = exp.Select(expressions=projections)
        for clause in ("from_", "joins", "laterals", "where", "hint"):
            value = select.args.get(clause)
            if value is not None:
                side.set(clause, [v.copy() for v in value] if isinstance(value, list) else value.copy())
        if keys:
            side.set("group", exp.Group(expressions=[k.copy() for k in keys]))
        return side

    def _global_python_side(self, select: exp.Select, values: Iterable[tuple[str, exp.Expr]]) -> exp.Select:
        """The Python aggregates of a global aggregate, grouped by a constant: no row over no
        rows (the LEFT JOIN supplies the empty values), and never merged with the native
        side by Spark's optimizer, whose subplan merging fails on a Python aggregate next to
        a global native one (INTERNAL_ERROR in ``PlanMerger``, Spark 4.x)."""
        side = self._side(select, [], [], values)
        side.set("group", exp.Group(expressions=[exp.Literal.string("all rows")]))
        return side

    def _on_empty(self, node: exp.Expr, parts: _Parts) -> exp.Expr:
        """Python results read from a LEFT JOINed global aggregate: 0 / empty over no rows."""
        calls = {name: call for name, call in parts.python.values()}
        node = node.copy()
        for column in [c for c in node.find_all(exp.Column) if c.table == self.python_alias]:
            spec = self.functions[str(calls[column.name].name).casefold()]
            if spec.on_empty is OnEmpty.NULL:
                continue
            empty: exp.Expr = exp.Literal.number(0) if spec.on_empty is OnEmpty.ZERO else exp.Array(expressions=[])
            replacement = exp.Coalesce(this=column.copy(), expressions=[empty])
            if column is node:
                return replacement
            column.replace(replacement)
        return node

    def _fail(self, message: str, node: exp.Expr | None) -> NoReturn:
        raise AggregatePlacementError(message, node_position(node, self.sql))


#: Nodes that are not values of their own (sort keys, window specifications, lambdas ...):
#: the split looks inside them instead of moving them.
STRUCTURE = (exp.Ordered, exp.Order, exp.WindowSpec, exp.Window, exp.Where, exp.Distinct, exp.Lambda, exp.Alias,
             exp.Identifier, exp.Var, exp.DataType)


def _substitute(node: exp.Expr, aliases: Mapping[str, exp.Expr], grouped: set[str],
                is_aggregate: Callable[[exp.Expr], bool]) -> exp.Expr:
    """``node`` with unqualified names of ``aliases`` replaced by their expressions, except
    grouped columns and names inside aggregate calls (there they are source columns)."""
    if not aliases:
        return node
    node = node.copy()
    for column in [c for c in _own_nodes(node) if isinstance(c, exp.Column) and not c.table]:
        name = column.name.casefold()
        if name not in aliases or name in grouped or _inside_aggregate(column, node, is_aggregate):
            continue
        replacement = exp.paren(aliases[name].copy())
        if column is node:
            return replacement
        column.replace(replacement)
    return node


def _inside_aggregate(node: exp.Expr, root: exp.Expr, is_aggregate: Callable[[exp.Expr], bool]) -> bool:
    outer = node.parent
    while outer is not None and outer is not root.parent:
        if is_aggregate(outer):
            return True
        outer = outer.parent
    return False


def _names(node: exp.Expr, outputs: set[str]) -> bool:
    """True when ``node`` reads an output column by name (outside aggregate calls)."""
    return any(isinstance(c, exp.Column) and not c.table and c.name.casefold() in outputs
               and not any(isinstance(a, (exp.AggFunc, exp.Anonymous)) for a in _ancestors(c, node))
               for c in _own_nodes(node))


def _ancestors(node: exp.Expr, root: exp.Expr) -> Iterator[exp.Expr]:
    outer = node.parent
    while outer is not None and outer is not root.parent:
        yield outer
        outer = outer.parent


def is_spark_aggregate(node: exp.Expr) -> bool:
    """True for a call of one of Spark's aggregate functions, not used as a window function."""
    if _is_window_function(node):
        return False
    if isinstance(node, exp.Anonymous):
        return str(node.name).casefold() in SPARK_AGGREGATES
    if isinstance(node, exp.Any):  # any(x) is bool_or; x = ANY (...) is a comparison
        return not isinstance(node.parent, exp.Binary)
    return isinstance(node, exp.AggFunc)


def _parts_of(select: exp.Select, clause: str) -> list[exp.Expr]:
    value = select.args.get(clause)
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _is_window_function(node: exp.Expr) -> bool:
    """``f`` in ``f(...) OVER (...)``: evaluated per row, not per group."""
    parent = node.parent
    return isinstance(parent, exp.Window) and parent.this is node


def _unaliased(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Alias) else node


def _reads_rows(node: exp.Expr) -> bool:
    """True unless ``node`` is a constant: no column, star, subquery, aggregate or unknown call."""
    return any(isinstance(n, (exp.Column, exp.Star, exp.Query, exp.Subquery, exp.AggFunc, exp.Anonymous))
               for n in node.walk())


__all__ = ["OnEmpty", "PythonAggregate", "SPARK_AGGREGATES", "is_spark_aggregate", "split_python_aggregates"]
