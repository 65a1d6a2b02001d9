"""The name Spark gives an unaliased SELECT expression, e.g. ``count(1)`` for ``COUNT(*)``.

When the compiler moves an expression (:mod:`sql_rewrites.generation.aggregates`), the output
column must keep the name Spark would have given it where it stood. Spark names an
unaliased expression by printing it "prettily" (``toPrettySQL``): columns without their
qualifier, string literals without quotes, function names in lower case, binary
operators in parentheses, ``count(*)`` as ``count(1)``, ``a <> b`` as ``(NOT (a = b))``,
a CAST as its operand. :func:`spark_column_name` follows those rules for the forms BI
tools and people write in a grouped SELECT (tests compare it with Spark's own names);
anything else — window specifications, functions whose defaults Spark spells out —
falls back to the SQL text, so alias such expressions when the name matters.

>>> from sql_rewrites.syntax.dialect import parse_statement
>>> [spark_column_name(e) for e in parse_statement(
...     "SELECT c.k, COUNT(*), seq_count(ts, t, 'SEQ(a, b)', INTERVAL 10 MINUTES) + 1 FROM c").expressions]
['k', 'count(1)', "(seq_count(ts, t, SEQ(a, b), INTERVAL '10' MINUTE) + 1)"]
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sql_rewrites.syntax.dialect import SparkSeq

BINARY: dict[type[exp.Expr], str] = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.EQ: "=", exp.NullSafeEQ: "<=>",
    exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.And: "AND", exp.Or: "OR",
    exp.BitwiseAnd: "&", exp.BitwiseOr: "|", exp.BitwiseXor: "^",
}
#: Spark's singular interval units, by the spellings sqlglot keeps.
TYPED_LITERALS = {exp.DType.DATE: "DATE", exp.DType.TIMESTAMP: "TIMESTAMP", exp.DType.TIMESTAMPLTZ: "TIMESTAMP",
                  exp.DType.TIMESTAMPTZ: "TIMESTAMP", exp.DType.TIMESTAMPNTZ: "TIMESTAMP_NTZ"}
UNITS = ("MICROSECOND", "MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "YEAR")


def spark_column_name(node: exp.Expr) -> str:
    """The output column name Spark gives ``node`` written without an alias."""
    if isinstance(node, exp.Alias):
        return node.alias
    return _pretty(node)


def _pretty(node: exp.Expr) -> str:
    for kind, printer in PRINTERS:
        if isinstance(node, kind):
            return printer(node)
    if isinstance(node, exp.Func):
        return _call(node)
    return node.sql(dialect=SparkSeq)


def _literal(node: exp.Literal) -> str:
    return node.name


def _column(node: exp.Column) -> str:
    return node.name


def _binary(node: exp.Binary) -> str:
    return f"({_pretty(node.this)} {BINARY[type(node)]} {_pretty(node.expression)})"


def _not_equal(node: exp.NEQ) -> str:
    return f"(NOT ({_pretty(node.this)} = {_pretty(node.expression)}))"


def _count(node: exp.Count) -> str:
    argument = node.this
    if argument is None or isinstance(argument, exp.Star):
        return "count(1)"
    if isinstance(argument, exp.Distinct):
        return f"count(DISTINCT {', '.join(_pretty(e) for e in argument.expressions)})"
    return f"count({', '.join(_pretty(e) for e in [argument, *node.expressions])})"


def _call(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        arguments = list(node.expressions)
        if len(arguments) == 1 and isinstance(arguments[0], exp.Distinct):
            return f"{str(node.name).lower()}(DISTINCT {_list(arguments[0].expressions)})"
        return f"{str(node.name).lower()}({_list(arguments)})"
    # Spark's own spelling of a function sqlglot knows (maybe by another name) and of its
    # arguments: print it with a placeholder per argument, then put the pretty arguments in
    copy = node.copy()
    pretty: dict[str, str] = {}
    for original, placeholder in _arguments(node, copy):
        name = f"__sparkseq_argument_{len(pretty)}"
        pretty[name] = _pretty(original)
        placeholder.replace(exp.column(name))
    head, paren, rest = copy.sql(dialect=SparkSeq).partition("(")
    text = head.lower() + paren + rest
    for name, value in pretty.items():
        text = text.replace(name, value)
    return text


def _arguments(node: exp.Expr, copy: exp.Expr) -> list[tuple[exp.Expr, exp.Expr]]:
    """(argument, its counterpart in ``copy``) for the value arguments of a call (inside DISTINCT too)."""
    pairs = []
    for original, twin in zip(node.iter_expressions(), copy.iter_expressions()):
        if isinstance(original, exp.Distinct):
            pairs += list(zip(original.expressions, twin.expressions))
        elif not isinstance(original, (exp.Var, exp.DataType, exp.Identifier)):
            pairs.append((original, twin))
    return pairs


def _list(nodes: list[exp.Expr]) -> str:
    return ", ".join(_pretty(n) for n in nodes)


def _interval(node: exp.Interval) -> str:
    unit = node.unit.name.upper() if node.unit is not None else ""
    unit = unit[:-1] if unit.endswith("S") and unit[:-1] in UNITS else unit
    if unit not in UNITS or not isinstance(node.this, exp.Literal):
        return node.sql(dialect=SparkSeq)
    return f"INTERVAL '{node.this.name}' {unit}"


def _case(node: exp.Case) -> str:
    parts = ["CASE"] + ([_pretty(node.this)] if node.this else [])
    for branch in node.args.get("ifs") or []:
        parts += ["WHEN", _pretty(branch.this), "THEN", _pretty(branch.args["true"])]
    if node.args.get("default") is not None:
        parts += ["ELSE", _pretty(node.args["default"])]
    return " ".join([*parts, "END"])


def _is(node: exp.Is) -> str:
    return f"({_pretty(node.this)} IS {_pretty(node.expression)})"


def _not(node: exp.Not) -> str:
    if isinstance(node.this, exp.Is):  # x IS NOT NULL
        return f"({_pretty(node.this.this)} IS NOT {_pretty(node.this.expression)})"
    return f"(NOT {_pretty(node.this)})"


def _in(node: exp.In) -> str:
    return f"({_pretty(node.this)} IN ({', '.join(_pretty(e) for e in node.expressions)}))"


def _between(node: exp.Between) -> str:
    return f"between({_pretty(node.this)}, {_pretty(node.args['low'])}, {_pretty(node.args['high'])})"


def _like(node: exp.Like) -> str:
    return f"{_pretty(node.this)} LIKE {_pretty(node.expression)}"


def _filter(node: exp.Filter) -> str:
    return f"{_pretty(node.this)} FILTER (WHERE {_pretty(node.expression.this)})"


def _typed(node: exp.Cast) -> str:
    keyword = TYPED_LITERALS.get(node.to.this)
    if keyword and isinstance(node.this, exp.Literal) and node.this.is_string:
        return f"{keyword} '{node.this.name}'"  # a typed literal: DATE '2024-01-01'
    return _pretty(node.this)


def _neg(node: exp.Neg) -> str:
    return f"(- {_pretty(node.this)})"


def _concat(node: exp.DPipe) -> str:
    return f"concat({_pretty(node.this)}, {_pretty(node.expression)})"


PRINTERS: tuple[tuple[type[exp.Expr], Callable[..., str]], ...] = (
    (exp.Paren, lambda n: _pretty(n.this)),
    (exp.Column, _column),
    (exp.Null, lambda n: "NULL"),
    (exp.Boolean, lambda n: "true" if n.this else "false"),
    (exp.Literal, _literal),
    (exp.NEQ, _not_equal),
    (exp.DPipe, _concat),
    (exp.Like, _like),
    (exp.Is, _is),
    (exp.Not, _not),
    (exp.In, _in),
    (exp.Between, _between),
    (exp.Neg, _neg),
    (exp.Interval, _interval),
    (exp.Case, _case),
    (exp.Filter, _filter),
    (exp.Cast, _typed),
    (exp.Count, _count),
    (exp.Binary, lambda n: _binary(n) if type(n) in BINARY else n.sql(dialect=SparkSeq)),
)


__all__ = ["spark_column_name"]
