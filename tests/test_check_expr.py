"""The problem files' expression language: numpy's values, the seed's conventions, and
refusal of everything outside the language (nothing is ever evaluated as Python)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toymachine.check.expr import ExprError, names_in, parse_expr
from toymachine.check.expr_eval import evaluate

RNG = np.random.default_rng(7)
ENV = {"a": RNG.standard_normal((3, 3)), "b": RNG.standard_normal((3, 3)), "x": RNG.standard_normal(6),
       "Q": RNG.standard_normal((5, 3)), "K": RNG.standard_normal((5, 3)), "V": RNG.standard_normal((5, 3))}


def ev(text):
    return evaluate(parse_expr(text), ENV)


def np_softmax(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


a, b, x, Q, K, V = (ENV[k] for k in ("a", "b", "x", "Q", "K", "V"))
CASES = [
    ("a @ b", a @ b), ("a @ b.T", a @ b.T), ("-a", -a), ("a - -b", a + b), ("2 * a + b / 4", 2 * a + b / 4),
    ("a - b - a", -b), ("a / b / a", a / b / a), ("-a @ b", (-a) @ b), ("(a + b) * 3", (a + b) * 3),
    ("1e-3 * x", 1e-3 * x), (".5 * x", 0.5 * x), ("exp(x)", np.exp(x)), ("log(exp(x))", x), ("sqrt(x * x)", abs(x)),
    ("max(x)", x.max()), ("max(a, axis=0)", a.max(axis=0)), ("max(a, axis=-1)", a.max(axis=1)),
    ("max(a, b)", np.maximum(a, b)), ("sum(a)", a.sum()), ("sum(a, axis=1)", a.sum(axis=1)),
    ("mean(x)", x.mean()), ("var(x)", x.var(ddof=1)), ("var(x, ddof=0)", x.var()),
    ("var(a, axis=0, ddof=0)", a.var(axis=0)), ("softmax(x)", np_softmax(x)), ("softmax(a, axis=0)", np_softmax(a, 0)),
    ("softmax(Q @ K.T) @ V", np_softmax(Q @ K.T) @ V), ("a.T.T", a),
    ("sum(exp(Q @ K.T), axis=-1) / exp(max(Q @ K.T, axis=-1))",
     np.exp(Q @ K.T - (Q @ K.T).max(axis=1, keepdims=True)).sum(axis=1)),
]


@pytest.mark.parametrize("text,want", CASES, ids=[c[0] for c in CASES])
def test_values_are_numpys(text, want):
    np.testing.assert_allclose(ev(text), want, rtol=1e-12, atol=1e-12)


def test_var_is_the_seeds_sample_variance():
    """Seed 000's Welford quiz: S² = Σ (xᵢ − x̄)² / (N − 1)."""
    xs = np.array([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    assert evaluate(parse_expr("var(x)"), {"x": xs}) == pytest.approx(32 / 7)


REFUSED = [
    ('__import__("os")', "unknown function '__import__'", 0),
    ("a.shape", "attribute access '.shape'", 1),
    ("exp(x).sum", "attribute access '.sum'", 6),
    ("a.__class__", "attribute access '.__class__'", 1),
    ("x[0]", "'[' is not part of", 1),
    ("a ** 2", "'**' is not part of", 2),
    ("'s'", "''' is not part of", 0),
    ("a if b else x", "unexpected 'if'", 2),
    ("lambda", "unknown name 'lambda'", 0),
    ("open(x)", "unknown function 'open'", 0),
    ("eval(x)", "unknown function 'eval'", 0),
    ("a; b", "';' is not part of", 1),
    ("max", "'max' is a function", 0),
    ("sum(a, b)", "sum() takes 1 argument, got 2", 0),
    ("sum(a, ddof=1)", "sum() has no keyword 'ddof'", 7),
    ("var(x, axis=0.5)", "axis must be a whole number", 12),
    ("a @", "the expression ends", 3),
    ("(a + b", "the expression ends where ')'", 6),
    ("a b", "unexpected 'b'", 2),
    ("", "empty expression", 0),
    ("a @ x", "cannot combine shapes (3, 3) and (6,)", 2),
    ("2 @ a", "@ needs arrays", 2),
    ("max(x, axis=2)", "max(): axis 2 is out of bounds", 0),
]


@pytest.mark.parametrize("text,needle,pos", REFUSED, ids=[r[0] or "empty" for r in REFUSED])
def test_everything_else_is_refused_naming_the_token(text, needle, pos):
    with pytest.raises(ExprError) as info:
        ev(text)
    assert needle in info.value.message and info.value.pos == pos


def test_names_are_collected_in_order():
    assert [n.name for n in names_in(parse_expr("softmax(Q @ K.T) @ V + max(x, axis=0)"))] == ["Q", "K", "V", "x"]


# -- precedence: random expressions printed with minimal parentheses evaluate as built ---------
LEAVES = {"p": RNG.standard_normal((2, 2)), "q": RNG.standard_normal((2, 2)), "r": RNG.standard_normal((2, 2))}
PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "@": 2}
OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "@": np.matmul}


def trees():
    leaf = st.sampled_from(sorted(LEAVES)).map(lambda n: ("name", n)) | \
        st.integers(1, 9).map(lambda k: ("num", k))
    return st.recursive(leaf, lambda kids: st.one_of(
        st.tuples(st.sampled_from(sorted(OPS)), kids, kids),
        st.tuples(st.just("neg"), kids),
        st.tuples(st.just("T"), kids),
        st.tuples(st.sampled_from(["exp", "softmax"]), kids)), max_leaves=8)


def text_of(t, parent=0, right=False):
    kind = t[0]
    if kind == "name":
        return t[1]
    if kind == "num":
        return str(t[1])
    if kind == "neg":
        return "-" + text_of(t[1], 3)
    if kind == "T":
        return "(" + text_of(t[1]) + ").T" if t[1][0] not in ("name",) else text_of(t[1]) + ".T"
    if kind in ("exp", "softmax"):
        return f"{kind}({text_of(t[1])})"
    p = PREC[kind]
    s = text_of(t[1], p) + f" {kind} " + text_of(t[2], p, True)
    return f"({s})" if p < parent or (right and p == parent) else s


def value_of(t):
    kind = t[0]
    if kind == "name":
        return LEAVES[t[1]]
    if kind == "num":
        return np.float64(t[1])
    if kind == "neg":
        return -value_of(t[1])
    if kind == "T":
        return np.transpose(value_of(t[1]))
    if kind == "exp":
        return np.exp(value_of(t[1]))
    if kind == "softmax":
        inner = value_of(t[1])
        if np.ndim(inner) == 0:  # a scalar has no last axis
            raise ValueError
        return np_softmax(inner)
    left, right = value_of(t[1]), value_of(t[2])
    if kind == "@" and (np.ndim(left) == 0 or np.ndim(right) == 0):
        raise ValueError
    return OPS[kind](left, right)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(trees())
def test_precedence_and_associativity_match_the_tree(tree):
    with np.errstate(all="ignore"):
        try:
            want = value_of(tree)
        except ValueError:
            with pytest.raises(ExprError):
                evaluate(parse_expr(text_of(tree)), LEAVES)
            return
        got = evaluate(parse_expr(text_of(tree)), LEAVES)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)
