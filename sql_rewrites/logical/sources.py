"""The columns of a MATCH_AGGREGATE source: a table, CTE, subquery or operator.

* A table is looked up in the caller's schema provider (:mod:`sql_rewrites.logical.schema`).
* A CTE visible at the operator, or a subquery, is *derived* with sqlglot's own
  optimizer (``qualify`` + ``annotate_types``) from the schemas of the relations it
  reads. Where sqlglot cannot tell a type (an unknown UDF, say) the column is kept
  with type UNKNOWN; analysis then asks for an explicit ``CAST`` only if it needs
  that type. Spark functions sqlglot does not type, such as ``timestamp_seconds``,
  are typed from :data:`sql_rewrites.logical.sql_types.SPARK_FUNCTION_TYPES`. ``SELECT *`` over
  a relation the provider does not know cannot be expanded and raises :class:`UnresolvedSourceError`.
* Another MATCH_AGGREGATE yields its analysed output columns.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from sql_rewrites.errors import UnknownTableError, UnresolvedSourceError, position_of
from sql_rewrites.logical.schema import Catalog, ColumnSchema, RelationSchema, table_name
from sql_rewrites.logical.sql_types import type_spark_functions, type_text
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.expressions import MatchAggregate, node_position

OutputSchemaOf = Callable[[MatchAggregate], RelationSchema]
SYNTHETIC_PREFIX = "__sparkseq_relation_"


class SourceResolver:
    """Resolves relation schemas for the analyser; memoises derived CTEs."""

    def __init__(self, catalog: Catalog, output_schema_of: OutputSchemaOf, sql: str | None = None) -> None:
        self.catalog = catalog
        self.output_schema_of = output_schema_of
        self.sql = sql
        self._cte_cache: dict[int, RelationSchema] = {}

    def source_schema(self, node: MatchAggregate) -> RelationSchema:
        """The columns of ``node.this``, the operator's input."""
        source = node.this
        if isinstance(source, MatchAggregate):
            return self.output_schema_of(source)
        if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
            return self.relation(source, visible_ctes(node))
        if isinstance(source, exp.Subquery):
            name = source.alias or "subquery"
            return self.derive(name, source.this, visible_ctes(node))
        where, written = node_position(source, self.sql), source.sql(dialect=SparkSeq)
        start, keyword = node.meta.get("source_start"), node.meta.get("start")
        if self.sql is not None and start is not None and keyword is not None and self.sql[start:keyword].strip():
            written = self.sql[start:keyword].strip()  # as the user wrote it
            where = position_of(self.sql, start, start + len(written) - 1)
        kind = ("a VALUES list" if isinstance(source, exp.Values) else "a table-valued function"
                if isinstance(source, exp.Table) else "a LATERAL subquery" if isinstance(source, exp.Lateral)
                else "this source")
        raise UnresolvedSourceError(
            f"MATCH_AGGREGATE cannot read from {kind} ({written[:60]}); use a table, view, CTE or subquery "
            "(SELECT * FROM ... AS s)", where)

    def relation(self, table: exp.Table, ctes: dict[str, exp.CTE]) -> RelationSchema:
        """A named relation: a visible CTE first, then the schema provider."""
        name = table_name(table)
        cte = ctes.get(name.casefold()) if not table.db else None
        if cte is not None:
            return self.cte(cte)
        schema = self.catalog.lookup(name)
        if schema is None:
            known = self.catalog.known_relations()
            hint = f"; known relations: {', '.join(known)}" if known else ""
            raise UnknownTableError(f"relation '{name}' is not known to the schema provider{hint}",
                                    node_position(table, self.sql))
        return schema

    def cte(self, cte: exp.CTE) -> RelationSchema:
        """The derived schema of a CTE, computed once."""
        key = id(cte)
        if key not in self._cte_cache:
            self._cte_cache[key] = self.derive(cte.alias, cte.this, visible_ctes(cte))
        return self._cte_cache[key]

    def derive(self, name: str, query: exp.Expr, ctes: dict[str, exp.CTE]) -> RelationSchema:
        """Derive a query's output columns with sqlglot (see module docstring)."""
        copy, schemas = self._flatten_relations(query, ctes)
        type_spark_functions(copy)
        mapping = MappingSchema(
            {rel: {c.name: type_text(c.dtype) for c in s.columns} for rel, s in schemas.items()}, dialect="spark"
        )
        try:
            qualified = qualify(
                copy, schema=mapping, dialect="spark", validate_qualify_columns=False,
                quote_identifiers=False, identify=False,
            )
            annotate_types(qualified, schema=mapping, dialect="spark")
        except SqlglotError as exc:
            raise UnresolvedSourceError(f"cannot derive the columns of '{name}': {exc}") from None
        return _projection_schema(name, qualified)

    def _flatten_relations(
        self, query: exp.Expr, ctes: dict[str, exp.CTE]
    ) -> tuple[exp.Expr, dict[str, RelationSchema]]:
        """Copy ``query`` with every outside relation renamed to a flat synthetic name.

        sqlglot's MappingSchema needs one nesting depth for all tables; flat names
        also let nested MATCH_AGGREGATE operators stand in as plain tables.
        """
        schemas: dict[str, RelationSchema] = {}
        operators = [self.output_schema_of(n) for n in query.find_all(MatchAggregate)]
        copy = query.copy()
        for schema, op in zip(operators, list(copy.find_all(MatchAggregate))):
            schemas[_stand_in(op, op.args.get("alias"), len(schemas))] = schema
        inner_ctes = {c.alias.casefold() for c in copy.find_all(exp.CTE)}
        for table in list(copy.find_all(exp.Table)):
            if not isinstance(table.this, exp.Identifier) or table.name.startswith(SYNTHETIC_PREFIX):
                continue
            if not table.db and table.name.casefold() in inner_ctes:
                continue
            try:
                schema = self.relation(table, ctes)
            except UnknownTableError:
                continue  # qualify leaves its columns unknown; reported if they matter
            alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name))
            schemas[_stand_in(table, alias, len(schemas))] = schema
        return copy, schemas


def _stand_in(node: exp.Expr, alias: exp.Expr | None, number: int) -> str:
    """Replace ``node`` by the synthetic table ``__sparkseq_relation_<number>``, keeping its alias."""
    name = f"{SYNTHETIC_PREFIX}{number}"
    node.replace(exp.Table(this=exp.to_identifier(name), alias=alias.copy() if alias else None))
    return name


def _projection_schema(name: str, query: exp.Expr) -> RelationSchema:
    if not isinstance(query, exp.Query):
        raise UnresolvedSourceError(f"cannot derive the columns of '{name}': not a query")
    columns = []
    for projection in query.selects:
        if isinstance(projection, exp.Star) or isinstance(projection.unalias(), exp.Star):
            raise UnresolvedSourceError(
                f"cannot expand * in '{name}': a relation it reads is unknown to the schema provider; "
                "list the columns or add the relation to the schema"
            )
        dtype = projection.type or exp.DataType.build("UNKNOWN")
        columns.append(ColumnSchema(projection.alias_or_name, dtype, type_text(dtype)))
    return RelationSchema(name, tuple(columns), derived=True)


def visible_ctes(node: exp.Expr) -> dict[str, exp.CTE]:
    """CTEs visible at ``node``: of every enclosing WITH, those defined before it.

    Inner WITH clauses shadow outer ones. A CTE does not see itself (no recursion).
    """
    visible: dict[str, exp.CTE] = {}
    child: exp.Expr = node
    for ancestor in _ancestors(node):
        with_ = ancestor.args.get("with_") if isinstance(ancestor, exp.Query) else None
        if with_ is not None:
            inside = with_ is child  # the path came up through this WITH: node is in a CTE
            for cte in with_.expressions:
                if inside and _contains(cte, node):
                    break
                visible.setdefault(cte.alias.casefold(), cte)
        child = ancestor
    return visible


def in_scope(select: exp.Select, node: exp.Expr) -> exp.Select:
    """``select`` with the CTEs visible at ``node`` (:func:`visible_ctes`), so that Spark
    can analyse it on its own: outer WITH clauses first (an inner CTE may read an outer
    one), each in its order of definition."""
    levels: dict[int, list[exp.CTE]] = {}
    for cte in visible_ctes(node).values():  # innermost WITH first
        levels.setdefault(id(cte.parent), []).append(cte)
    ctes = [cte.copy() for level in reversed(list(levels.values())) for cte in level]
    if not ctes:
        return select
    scoped = select.copy()
    scoped.set("with_", exp.With(expressions=ctes))
    return scoped


def _ancestors(node: exp.Expr) -> list[exp.Expr]:
    result = []
    parent = node.parent
    while parent is not None:
        result.append(parent)
        parent = parent.parent
    return result


def _contains(tree: exp.Expr, node: exp.Expr) -> bool:
    return any(n is node for n in tree.walk())
