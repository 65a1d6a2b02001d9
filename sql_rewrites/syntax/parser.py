"""Parsing MATCH_AGGREGATE: sqlglot's Spark parser plus one table operator.

The keyword is matched by its text (``_match_text_seq``), as sqlglot does for
MATCH_RECOGNIZE's sub-clauses, so the tokenizer stays Spark's. The operator may
follow anything ``_parse_table`` returns (table, view, subquery, or another
operator), which makes it usable in FROM, JOIN, CTEs, subqueries, CREATE VIEW and
INSERT ... SELECT.

Sub-clauses may come in any order, each at most once; :attr:`SparkSeqParser.
MATCH_AGGREGATE_CLAUSE_PARSERS` is the registry of them (keyword -> parser
returning ``(arg name, value)``), like sqlglot's ``QUERY_MODIFIER_PARSERS``.

Besides sqlglot's token positions, the parser records where user text stands that
Spark will analyse (the Spark layer analyses it again there to place Spark's own
errors, :mod:`sparkseq.statements.spark_errors`): a :class:`MatchAggregate`'s ``meta`` holds
``source_start`` (offset of its source's first character) and ``clause_end`` (of its
closing parenthesis); each DEFINE entry's ``meta`` holds ``condition_start`` and
``condition_end`` (its condition's first and last character).
"""

from __future__ import annotations

import typing as t

from sqlglot import exp
from sqlglot.parser import SENTINEL_NONE
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

from sql_rewrites.errors import missing_part_message
from sql_rewrites.syntax.expressions import (
    MatchAggregate,
    MatchCube,
    MatchPattern,
    MatchPatternElement,
    MatchPatterns,
    MatchQuantifier,
    MatchRollup,
    MatchUncertain,
    PatternArgument,
)
from udafs.plan import Strategy

MATCH_AGGREGATE = "MATCH_AGGREGATE"
COUNT_TYPES = ("BIGINT", "DECIMAL", "DOUBLE")

#: ``Placeholder.meta`` key: the character offset of a positional marker (``?``) in the text.
MARKER_OFFSET = "sparkseq_marker_offset"
ClauseParser = t.Callable[["SparkSeqParser"], tuple[str, t.Any]]
#: Tokens after a clause keyword that make it a name (a column or symbol called ``pattern``).
NAME_FOLLOWERS = frozenset({TokenType.COMMA, TokenType.R_PAREN, TokenType.ALIAS, TokenType.DOT})
#: One-word clause keywords whose clause opens with a parenthesis (``CUBE (...)``): there, a
#: parenthesis after the keyword starts the clause rather than a call of a function so named.
PARENTHESISED_CLAUSES = frozenset({"PATTERNS", "CUBE"})


class SparkSeqParser(SparkParser):
    """Spark's parser extended with the MATCH_AGGREGATE table operator."""

    MATCH_AGGREGATE_CLAUSE_PARSERS: t.ClassVar[dict[str, ClauseParser]] = {
        "PARTITION BY": lambda self: ("partition_by", self._parse_match_list(
            self._parse_disjunction, "PARTITION BY", "an expression")),
        "ORDER BY": lambda self: ("order", self._parse_order(skip_order_token=True)),
        "PATTERN": lambda self: ("pattern", self._parse_match_pattern()),
        "PATTERNS": lambda self: ("patterns", self._parse_match_patterns()),
        "CUBE": lambda self: ("cube", self._parse_match_cube()),
        "DEFINE": lambda self: ("define", self._parse_match_list(
            self._parse_match_definition, "DEFINE", "a symbol definition (name AS condition)")),
        "TYPE BY": lambda self: ("type_by", self._parse_match_type_by()),
        "HIERARCHY": lambda self: ("hierarchy", self._parse_match_hierarchy()),
        "MEASURES": lambda self: ("measures", self._parse_match_list(
            self._parse_match_measure, "MEASURES", "a measure such as COUNT(*) AS name")),
        "WITHIN": lambda self: ("within", self._parse_match_duration("WITHIN")),
        "SLIDE": lambda self: ("slide", self._parse_match_duration("SLIDE")),
        "COUNT TYPE": lambda self: ("count_type", self._parse_match_count_type()),
        "WHERE": lambda self: ("where", self._parse_match_where()),
        "STRATEGY": lambda self: ("strategy", self._parse_match_strategy()),
        "UNCERTAIN": lambda self: ("uncertain", self._parse_match_uncertain()),
    }

    #: Tokens that may follow a column in an expression: after one of them a one-word clause
    #: keyword inside the operator is a column (``pattern = 1``), not the next clause.
    COLUMN_FOLLOWERS: t.ClassVar[frozenset[TokenType]] = frozenset().union(
        SparkParser.EQUALITY, SparkParser.COMPARISON, SparkParser.BITWISE, SparkParser.TERM, SparkParser.FACTOR,
        SparkParser.EXPONENT, SparkParser.CONJUNCTION, SparkParser.DISJUNCTION, SparkParser.RANGE_PARSERS,
        SparkParser.COLUMN_OPERATORS, NAME_FOLLOWERS,
        {TokenType.NOT, TokenType.L_BRACKET, TokenType.R_BRACKET, TokenType.THEN, TokenType.ELSE, TokenType.END,
         TokenType.WHEN, TokenType.FROM, TokenType.SEMICOLON})

    TABLE_OPERATOR_PARSERS: t.ClassVar[dict[str, t.Callable[..., exp.Expr]]] = {
        MATCH_AGGREGATE: lambda self, this: self._parse_match_aggregate(this),
    }

    # like exp.Table, a MATCH_AGGREGATE in parentheses may carry joins: (t MATCH_AGGREGATE (...) m JOIN u ON ...)
    MODIFIABLES: t.ClassVar = (*SparkParser.MODIFIABLES, MatchAggregate)  # type: ignore[assignment]  # sqlglot types its exact tuple

    EXPRESSION_PARSERS: t.ClassVar = {
        **SparkParser.EXPRESSION_PARSERS,
        MatchPattern: lambda self: self._parse_match_pattern(),
        PatternArgument: lambda self: self._parse_pattern_argument(),
        MatchRollup: lambda self: self._parse_match_rollup(),
        exp.Interval: lambda self: self._parse_match_duration("WITHIN"),  # WITHIN / SLIDE values
    }

    # A positional marker remembers where it stood, so that the rewrite can keep the
    # order in which Spark binds `?` values (sql_rewrites.syntax.markers)
    PLACEHOLDER_PARSERS: t.ClassVar = {
        **SparkParser.PLACEHOLDER_PARSERS,
        TokenType.PLACEHOLDER: lambda self: self._parse_positional_marker(),
    }

    def _parse_positional_marker(self) -> exp.Expr:
        marker = self.expression(exp.Placeholder())
        marker.meta[MARKER_OFFSET] = self._prev.start
        return marker

    def raise_error(self, message: str, token: Token = SENTINEL_NONE) -> None:
        """sqlglot's error, with its message for an incomplete expression (naming a node
        class) said in SQL words: ``x = 1 AND)`` is "Expecting an expression after AND"."""
        super().raise_error(missing_part_message(message, self._prev.text if self._prev else None), token)

    # --- Spark's literals -----------------------------------------------------------------

    def _parse_primary(self) -> exp.Expr | None:
        # Spark reads literals written one after another ('a' 'b') as one literal; sqlglot
        # builds CONCAT('a', 'b'), which is not a literal where Spark needs one
        primary = super()._parse_primary()
        if isinstance(primary, exp.Concat) and all(
            isinstance(e, exp.Literal) and e.is_string for e in primary.expressions
        ):
            joined = exp.Literal.string("".join(e.this for e in primary.expressions))
            return joined.update_positions(primary.expressions[0])
        return primary

    # --- hooks into sqlglot's table parsing -------------------------------------------

    def _parse_table(
        self,
        schema: bool = False,
        joins: bool = False,
        alias_tokens: t.Collection[TokenType] | None = None,
        parse_bracket: bool = False,
        is_db_reference: bool = False,
        parse_partition: bool = False,
        consume_pipe: bool = False,
    ) -> exp.Expr | None:
        start = self._curr
        this = super()._parse_table(
            schema=schema,
            joins=joins,
            alias_tokens=alias_tokens,
            parse_bracket=parse_bracket,
            is_db_reference=is_db_reference,
            parse_partition=parse_partition,
            consume_pipe=consume_pipe,
        )
        if this is None or schema or is_db_reference:
            return this
        return self._parse_table_operators(this, joins=joins, start=start)

    def _parse_table_alias(
        self, alias_tokens: t.Collection[TokenType] | None = None
    ) -> exp.TableAlias | None:
        # ``FROM t MATCH_AGGREGATE (`` must not read MATCH_AGGREGATE as t's alias
        if self._table_operator_ahead():
            return None
        return super()._parse_table_alias(alias_tokens)

    def _table_operator_ahead(self) -> str | None:
        curr = self._curr
        if curr and curr.token_type == TokenType.VAR and self._next:
            keyword = curr.text.upper()
            if keyword in self.TABLE_OPERATOR_PARSERS and self._next.token_type == TokenType.L_PAREN:
                return keyword
        return None

    def _parse_table_operators(self, this: exp.Expr, joins: bool = False, start: t.Any = None) -> exp.Expr:
        applied = False
        while keyword := self._table_operator_ahead():
            this = self.TABLE_OPERATOR_PARSERS[keyword](self, this)
            if start is not None:
                this.meta["source_start"] = start.start
            applied = True
        if applied and joins:
            for join in self._parse_joins():
                this.append("joins", join)
        return this

    # --- MATCH_AGGREGATE ----------------------------------------------------------------

    #: True while parsing MATCH_AGGREGATE's clauses, where a clause keyword ends an expression
    _in_match_clauses = False

    def _parse_match_aggregate(self, this: exp.Expr) -> MatchAggregate:
        start = self._curr
        self._advance()  # MATCH_AGGREGATE, checked by _table_operator_ahead
        self._match_l_paren()
        args: dict[str, t.Any] = {"this": this}
        outer, self._in_match_clauses = self._in_match_clauses, True
        try:
            while not self._match(TokenType.R_PAREN):
                if not self._curr:
                    self.raise_error("Expecting ) to close MATCH_AGGREGATE (", start)
                    break
                arg, value = self._parse_match_aggregate_clause(args)
                if arg:
                    args[arg] = value
        finally:
            self._in_match_clauses = outer
        if not args.get("order"):
            self.raise_error("MATCH_AGGREGATE needs ORDER BY", start)
        if args.get("pattern") and args.get("patterns"):
            self.raise_error("MATCH_AGGREGATE takes PATTERN or PATTERNS, not both", start)
        elif not args.get("pattern") and not args.get("patterns"):
            self.raise_error("MATCH_AGGREGATE needs PATTERN", start)
        elif args.get("cube") and not args.get("pattern"):
            self.raise_error("CUBE rolls up the positions of PATTERN SEQ(...); with PATTERNS list the cuboids "
                             "themselves", start)
        close = self._prev
        args["alias"] = self._parse_table_alias()
        node = self.expression(MatchAggregate(**args), start)
        node.meta["clause_end"] = close.end
        return node

    def _parse_match_aggregate_clause(self, seen: dict[str, t.Any]) -> tuple[str, t.Any]:
        token = self._curr
        for keyword, parser in self.MATCH_AGGREGATE_CLAUSE_PARSERS.items():
            if self._match_texts((keyword,)) or self._match_text_seq(*keyword.split()):
                arg, value = parser(self)
                if seen.get(arg) is not None:
                    self.raise_error(f"Found multiple {keyword} clauses in MATCH_AGGREGATE", token)
                return arg, value
        expected = ", ".join(self.MATCH_AGGREGATE_CLAUSE_PARSERS)
        self.raise_error(f"Expecting one of {expected} or ) in MATCH_AGGREGATE", token)
        self._advance()
        return "", None

    def _at_match_clause_keyword(self) -> bool:
        for keyword in self.MATCH_AGGREGATE_CLAUSE_PARSERS:
            if self._match_texts((keyword,), advance=False):
                return True
            if self._match_text_seq(*keyword.split(), advance=False):
                return True
        return False

    def _parse_match_pattern(self) -> MatchPattern:
        start = self._curr
        if not self._match_text_seq("SEQ"):
            self.raise_error("Expecting SEQ( after PATTERN")
        self._match_l_paren()
        if self._match(TokenType.R_PAREN, advance=False):
            self.raise_error("SEQ needs at least one symbol")
        elements = self._parse_csv(self._parse_match_pattern_element)
        self._match_r_paren()
        return self.expression(MatchPattern(expressions=elements), start)

    def _parse_match_patterns(self) -> MatchPatterns:
        start = self._curr
        self._match_l_paren()
        patterns = self._parse_csv(self._parse_match_pattern)
        self._match_r_paren()
        return self.expression(MatchPatterns(expressions=patterns), start)

    def _parse_match_cube(self) -> MatchCube:
        start = self._curr
        self._match_l_paren()
        items = self._parse_csv(self._parse_match_rollup)
        self._match_r_paren()
        return self.expression(MatchCube(expressions=items), start)

    def _parse_match_rollup(self) -> MatchRollup:
        start = self._curr
        if not self._match_texts(("CONCEPT", "PATTERN")):
            self.raise_error("Expecting CONCEPT ROLLUP or PATTERN ROLLUP in CUBE")
        kind = self._prev.text.upper()
        if not self._match_text_seq("ROLLUP"):
            self.raise_error(f"Expecting ROLLUP after {kind}")
        position = self._parse_number() if self._match(TokenType.NUMBER, advance=False) else None
        position = position or self._parse_match_symbol()
        to = None
        if self._match_text_seq("TO"):
            if kind != "CONCEPT":
                self.raise_error("Only CONCEPT ROLLUP takes TO <ancestor>", self._prev)
            to = self._parse_match_symbol()
        return self.expression(MatchRollup(this=position, kind=exp.var(kind), to=to), start)

    def _parse_match_pattern_element(self) -> MatchPatternElement:
        start = self._curr
        negated = self._match(TokenType.NOT)
        symbol = self._parse_match_symbol()
        kleene = self._match(TokenType.PLUS)
        if negated and kleene:
            self.raise_error("A negated symbol cannot be Kleene plus (!X+)", self._prev)
        quantifier = None if kleene else self._parse_match_quantifier()
        if ((kleene or quantifier) and self._match(TokenType.PLACEHOLDER)) or self._match(TokenType.DQMARK):
            self.raise_error("A reluctant quantifier (X+?, X*?, X??, X{n,m}?) means the same as its greedy "
                             "form here: every match is counted, whichever rows a quantified symbol takes; drop "
                             "the trailing ?", self._prev)
        return self.expression(MatchPatternElement(
            this=symbol, negated=negated or None, kleene=kleene or None, quantifier=quantifier), start)

    def _parse_match_quantifier(self) -> MatchQuantifier | None:
        """``?``, ``*``, ``{n}``, ``{n,}`` or ``{n,m}`` after a pattern symbol (checked by analysis)."""
        start = self._curr
        if self._match_set((TokenType.PLACEHOLDER, TokenType.STAR)):
            unbounded = self._prev.token_type == TokenType.STAR
            return self.expression(MatchQuantifier(optional=True, unbounded=unbounded or None), start)
        if not self._match(TokenType.L_BRACE):
            return None
        least = self._parse_quantifier_bound("Expecting the least number of rows in {n}, {n,} or {n,m}; "
                                             "a symbol that may bind no row is written X? or X*")
        most, unbounded = None, False
        if self._match(TokenType.COMMA):
            unbounded = self._match(TokenType.R_BRACE, advance=False)
            most = None if unbounded else self._parse_quantifier_bound(
                "Expecting the most number of rows after ',' in {n,m}, or } for {n,}")
        if not self._match(TokenType.R_BRACE):
            self.raise_error("Expecting } to close the quantifier {n}, {n,} or {n,m}")
        node = MatchQuantifier(this=least, expression=most, unbounded=unbounded or None)
        return node.update_positions(line=start.line, col=start.col, start=start.start, end=self._prev.end)

    def _parse_quantifier_bound(self, message: str) -> exp.Literal:
        token = self._curr
        if not (token and token.token_type == TokenType.NUMBER and token.text.isdigit()):
            self.raise_error(message, token)
        self._advance()
        return self.expression(exp.Literal(this=token.text, is_string=False), token)

    def _parse_match_symbol(self) -> exp.Expr:
        token = self._curr
        symbol = self._parse_string() if self._match(TokenType.STRING, advance=False) else None
        symbol = symbol or self._parse_id_var(any_token=False)
        if symbol is None or not symbol.name:
            self.raise_error("Expecting a symbol: a name or a 'quoted type value'", token)
        return t.cast(exp.Expr, symbol)

    def _parse_match_list(self, parse_entry: t.Callable[[], exp.Expr | None], clause: str,
                          entry: str) -> list[exp.Expr]:
        """The comma-separated entries of a clause: at least one, and every comma followed by
        another entry, not by the next clause or the closing parenthesis (a trailing comma
        is an error placed on the comma)."""
        entries: list[exp.Expr] = []
        while True:
            if self._at_next_clause():
                after_comma = bool(entries) and self._prev is not None and self._prev.token_type == TokenType.COMMA
                where = f"after ',' in {clause}" if after_comma else f"after {clause}"
                self.raise_error(f"Expecting {entry} {where}", self._prev if after_comma else self._curr)
            parsed = parse_entry()
            if parsed is not None:
                entries.append(parsed)
            if not self._match(TokenType.COMMA):
                return entries
            if parsed is not None:
                self._add_comments(parsed)

    def _at_next_clause(self) -> bool:
        """At the closing parenthesis or the keyword of the next clause, rather than at an
        entry of the current one. A one-word clause keyword followed by ``,``, ``)``, ``AS``,
        ``.``, the end or another clause is a column or symbol of that name (``PARTITION BY
        pattern ORDER BY ts``)."""
        if self._curr is None or self._curr.token_type == TokenType.R_PAREN:
            return True
        if not self._at_match_clause_keyword():
            return False
        if self._curr.text.upper() not in self.MATCH_AGGREGATE_CLAUSE_PARSERS:  # ORDER BY, TYPE BY, COUNT TYPE, ...
            return True
        index = self._index
        self._advance()
        named = self._curr is None or self._curr.token_type in NAME_FOLLOWERS or self._at_match_clause_keyword()
        self._retreat(index)
        return not named

    def _parse_column(self) -> exp.Expr | None:
        # an operand of an expression inside the operator: the next clause's keyword is no
        # column (``x = 1 AND MEASURES COUNT(*)`` lacks the operand after AND)
        if self._in_match_clauses and self._at_clause_in_expression():
            return None
        return super()._parse_column()

    def _at_clause_in_expression(self) -> bool:
        """Where an operand of an expression may stand: at the keyword of a clause rather than
        at a column of that name. A two-word keyword (``TYPE BY``, ``COUNT TYPE``) always
        starts a clause; a one-word keyword is a column when what follows it can follow a
        column in an expression (an operator, ``)``, ``,``, ``AS``, ``.``, a function's ``(``,
        the end) or another clause's keyword: ``pattern = 1`` reads column ``pattern``,
        ``MEASURES COUNT(*)`` starts MEASURES."""
        if self._curr is None or not self._at_match_clause_keyword():
            return False
        keyword = self._curr.text.upper()
        if keyword not in self.MATCH_AGGREGATE_CLAUSE_PARSERS:  # ORDER BY, TYPE BY, COUNT TYPE, ...
            return True
        following = self._next
        if following is None:
            return False
        if following.token_type == TokenType.L_PAREN:
            return keyword in PARENTHESISED_CLAUSES
        if following.token_type in self.COLUMN_FOLLOWERS:
            return False
        index = self._index
        self._advance()
        named = self._at_match_clause_keyword()  # ``B AS slide MEASURES ...``: the condition is column slide
        self._retreat(index)
        return not named

    def _parse_match_definition(self) -> exp.Alias | None:
        name = self._parse_id_var(any_token=False)
        if name is None:
            self.raise_error("Expecting a symbol name in DEFINE")
        if not self._match(TokenType.ALIAS):
            self.raise_error("Expecting AS after the symbol name in DEFINE")
        first = self._curr
        condition = self._parse_disjunction()
        if condition is None:
            self.raise_error("Expecting a condition after AS in DEFINE")
        definition = self.expression(exp.Alias(this=condition, alias=name))
        if first is not None and self._prev is not None:
            definition.meta.update(condition_start=first.start, condition_end=self._prev.end)
        return definition

    def _parse_match_measure(self) -> exp.Expr | None:
        this = self._parse_disjunction()
        if this is None:
            self.raise_error("Expecting a measure such as COUNT(*) AS name")
        if self._match(TokenType.ALIAS):
            alias = self._parse_id_var(any_token=True)
        elif not self._at_match_clause_keyword():
            alias = self._parse_id_var(any_token=False)
        else:
            alias = None
        return self.expression(exp.Alias(this=this, alias=alias)) if alias else this

    def _parse_match_type_by(self) -> exp.Expr:
        column = self._parse_column()
        if column is None:
            self.raise_error("Expecting a column after TYPE BY")
        return t.cast(exp.Expr, column)

    def _parse_pattern_argument(self) -> PatternArgument:
        """``SEQ(...)`` then ``STRATEGY words`` and ``HIERARCHY name``, each at most once, in either order."""
        start = self._curr
        args: dict[str, t.Any] = {"this": self._parse_match_pattern()}
        while True:
            if "strategy" not in args and self._match_text_seq("STRATEGY"):
                args["strategy"] = self._parse_match_strategy()
            elif "hierarchy" not in args and self._match_text_seq("HIERARCHY"):
                args["hierarchy"] = self._parse_match_hierarchy()
            else:
                return self.expression(PatternArgument(**args), start)

    def _parse_match_hierarchy(self) -> exp.Expr:
        name = self._parse_id_var(any_token=False) or self._parse_string_as_identifier()
        if name is None:
            self.raise_error("Expecting a hierarchy name after HIERARCHY")
        return t.cast(exp.Expr, name)

    def _parse_match_duration(self, keyword: str) -> exp.Expr:
        first = self._curr
        value = self._parse_term()
        if value is None:
            self.raise_error(f"Expecting an INTERVAL or a number after {keyword}")
            return exp.null()
        # interval literals keep no token positions; give analysis errors the whole span
        return value.update_positions(line=first.line, col=first.col, start=first.start, end=self._prev.end)

    def _parse_match_count_type(self) -> exp.Var:
        if not self._match_texts(COUNT_TYPES):
            self.raise_error(f"Expecting one of {', '.join(COUNT_TYPES)} after COUNT TYPE")
        return exp.var(self._prev.text.upper())

    #: True while parsing MATCH_AGGREGATE's WHERE, where ``B[]`` (SASE++: the whole Kleene set) is read
    _kleene_where = False

    def _parse_bracket(self, this: exp.Expr | None = None) -> exp.Expr | None:
        if (self._kleene_where and this is not None and self._curr and self._next
                and self._curr.token_type == TokenType.L_BRACKET and self._next.token_type == TokenType.R_BRACKET):
            self._advance(2)  # B[] becomes B[*]: analysis reports what it cannot count
            return super()._parse_bracket(self.expression(exp.Bracket(this=this, expressions=[exp.Star()])))
        return super()._parse_bracket(this)

    def _parse_match_where(self) -> exp.Expr:
        """``WHERE <condition>``: cross-event, iterator and local predicates (checked by analysis)."""
        token = self._curr
        self._kleene_where = True
        try:
            condition = self._parse_disjunction()
        finally:
            self._kleene_where = False
        if condition is None:
            self.raise_error("Expecting a condition after WHERE, e.g. A.price < B.price", token)
            return exp.true()
        return condition

    def _parse_match_strategy(self) -> exp.Var:
        """``STRATEGY SKIP TILL NEXT MATCH`` etc. (:meth:`udafs.plan.Strategy.sql`)."""
        token = self._curr
        for strategy in Strategy:
            if self._match_text_seq(*strategy.sql.split()):
                return self.expression(exp.var(strategy.sql), token)
        self.raise_error(f"Expecting one of {', '.join(Strategy.sql_choices())} after STRATEGY", token)
        return exp.var(Strategy.SKIP_TILL_ANY_MATCH.sql)

    def _parse_match_uncertain(self) -> MatchUncertain:
        """``UNCERTAIN BETWEEN lo AND hi [STEP length]`` (imprecise timestamps)."""
        start = self._curr
        if not self._match(TokenType.BETWEEN):
            self.raise_error("Expecting BETWEEN after UNCERTAIN, e.g. UNCERTAIN BETWEEN ts_lo AND ts_hi")
        lo = self._parse_column()
        if lo is None or not self._match(TokenType.AND):
            self.raise_error("Expecting UNCERTAIN BETWEEN <column> AND <column>")
        hi = self._parse_column()
        if hi is None:
            self.raise_error("Expecting a column after UNCERTAIN BETWEEN ... AND")
        step = self._parse_match_duration("STEP") if self._match_text_seq("STEP") else None
        return self.expression(MatchUncertain(this=lo, expression=hi, step=step), start)
