"""Arithmetic expressions read from tokens and evaluated in JAX: numbers, ``+ - * /`` with the
usual precedence, parentheses and spaces, by the shunting-yard algorithm (Dijkstra, 1961) in
one ``lax.scan`` over the tokens with fixed-size stacks. No Python runs per expression, so a
population's completions are checked inside the compiled step."""

from __future__ import annotations

from dataclasses import replace

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from evolax.tasks.text.common import ZERO

OPEN, CLOSE = ord("("), ord(")")
OPERATORS = np.array([ord("+"), ord("-"), ord("*"), ord("/")], np.int32)  # numpy: nothing at import


@chex.dataclass(frozen=True)
class Parser:
    """The scan's state: the number being read, the value and operator stacks (``top``: how
    many entries each holds), the numbers read so far, and whether the expression has ended
    or broken a rule."""

    number: Int[Array, ""]
    in_number: Bool[Array, ""]
    values: Float[Array, " depth"]
    n_values: Int[Array, ""]
    ops: Int[Array, " depth"]
    n_ops: Int[Array, ""]
    numbers: Int[Array, " slots"]
    n_numbers: Int[Array, ""]
    ended: Bool[Array, ""]
    broken: Bool[Array, ""]


def _precedence(op: Int[Array, ""]) -> Int[Array, ""]:
    return jnp.where((op == ord("*")) | (op == ord("/")), 2, jnp.where(op == OPEN, 0, 1))


def _apply(p: Parser) -> Parser:
    """Pop an operator and two values, push the result (a stack too short breaks it)."""
    short = (p.n_values < 2) | (p.n_ops < 1)
    a = p.values[jnp.maximum(p.n_values - 2, 0)]
    b = p.values[jnp.maximum(p.n_values - 1, 0)]
    op = p.ops[jnp.maximum(p.n_ops - 1, 0)]
    result = jnp.select(
        [op == ord("+"), op == ord("-"), op == ord("*")], [a + b, a - b, a * b], a / b
    )
    slot = jnp.maximum(p.n_values - 2, 0)
    return replace(
        p,
        values=jnp.where(short, p.values, p.values.at[slot].set(result)),
        n_values=jnp.where(short, p.n_values, p.n_values - 1),
        n_ops=jnp.where(short, p.n_ops, p.n_ops - 1),
        broken=p.broken | short | (op == OPEN),
    )


def _unwind(p: Parser, stop_at: Int[Array, ""]) -> Parser:
    """Apply operators while the top one binds at least as tightly as ``stop_at`` (and is
    not an open parenthesis)."""

    def more(p):
        top = p.ops[jnp.maximum(p.n_ops - 1, 0)]
        return (p.n_ops > 0) & (top != OPEN) & (_precedence(top) >= stop_at) & ~p.broken

    return jax.lax.while_loop(more, _apply, p)


def _end_number(p: Parser) -> Parser:
    """Push the number being read, if any, and record it."""
    full = (p.n_values >= p.values.shape[0]) | (p.n_numbers >= p.numbers.shape[0])
    push = p.in_number & ~full
    return replace(
        p,
        values=jnp.where(push, p.values.at[p.n_values].set(p.number), p.values),
        n_values=p.n_values + push,
        numbers=jnp.where(push, p.numbers.at[p.n_numbers].set(p.number), p.numbers),
        n_numbers=p.n_numbers + push,
        number=jnp.zeros_like(p.number),
        in_number=jnp.zeros_like(p.in_number),
        broken=p.broken | (p.in_number & full),
    )


def _read(p: Parser, token: Int[Array, ""]) -> Parser:
    digit = (token >= ZERO) & (token <= ZERO + 9)
    operator = jnp.any(token == OPERATORS)
    space = token == ord(" ")
    known = digit | operator | space | (token == OPEN) | (token == CLOSE)
    ends = ~known  # the first other token (end of sequence, a newline) ends the expression

    def read_digit(p):
        number = p.number * 10 + (token - ZERO)
        return replace(
            p,
            number=number,
            in_number=jnp.ones_like(p.in_number),
            broken=p.broken | (number > 10**7),
        )

    def read_operator(p):
        p = _unwind(_end_number(p), _precedence(token))
        full = p.n_ops >= p.ops.shape[0]
        return replace(
            p,
            ops=jnp.where(full, p.ops, p.ops.at[p.n_ops].set(token)),
            n_ops=p.n_ops + ~full,
            broken=p.broken | full,
        )

    def read_close(p):
        p = _unwind(_end_number(p), jnp.asarray(1))
        matched = (p.n_ops > 0) & (p.ops[jnp.maximum(p.n_ops - 1, 0)] == OPEN)
        return replace(p, n_ops=p.n_ops - matched, broken=p.broken | ~matched)

    def finish(p):
        p = _unwind(_end_number(p), jnp.asarray(0))
        return replace(p, ended=jnp.ones_like(p.ended), broken=p.broken | (p.n_ops > 0))

    def read_open(p):  # pushed as an operator nothing unwinds (_unwind stops at it)
        full = p.n_ops >= p.ops.shape[0]
        return replace(
            p,
            ops=jnp.where(full, p.ops, p.ops.at[p.n_ops].set(OPEN)),
            n_ops=p.n_ops + ~full,
            broken=p.broken | full | p.in_number,
        )

    branch = jnp.select([digit, operator, token == OPEN, token == CLOSE, ends], [0, 1, 2, 3, 4], 5)
    branches = [read_digit, read_operator, read_open, read_close, finish, _end_number]
    return jax.lax.cond(
        p.ended | p.broken, lambda p: p, lambda p: jax.lax.switch(branch, branches, p), p
    )


def evaluate(
    tokens: Int[Array, " n"], depth: int = 16, slots: int = 8
) -> tuple[Float[Array, ""], Int[Array, " slots"], Int[Array, ""], Bool[Array, ""]]:
    """The value of the expression ``tokens`` start with (up to the first token that is not a
    digit, operator, parenthesis or space), the numbers it uses (``slots`` of them, ``-1``
    after the last) and how many, and whether it is well formed (balanced, nothing missing,
    at most ``depth`` pending values and operators and ``slots`` numbers). Arithmetic is in
    float32, ``/`` is true division (by zero: ``inf``)."""
    start = Parser(
        number=jnp.zeros((), jnp.int32),
        in_number=jnp.zeros((), bool),
        values=jnp.zeros(depth, jnp.float32),
        n_values=jnp.zeros((), jnp.int32),
        ops=jnp.zeros(depth, jnp.int32),
        n_ops=jnp.zeros((), jnp.int32),
        numbers=jnp.full(slots, -1, jnp.int32),
        n_numbers=jnp.zeros((), jnp.int32),
        ended=jnp.zeros((), bool),
        broken=jnp.zeros((), bool),
    )
    end, _ = jax.lax.scan(lambda p, t: (_read(p, t), None), start, tokens.astype(jnp.int32))
    end = jax.lax.cond(
        end.ended | end.broken, lambda p: p, lambda p: _read(p, jnp.asarray(-1)), end
    )
    ok = ~end.broken & (end.n_values == 1) & (end.n_ops == 0)
    return end.values[0], end.numbers, end.n_numbers, ok
