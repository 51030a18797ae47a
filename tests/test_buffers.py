"""Buffers made inside a transformed function accept traced values (issue 25, rune.buffers).

Each idiom is checked against a functional version of itself (np.stack, np.where: no
writes) in every mode, against central finite differences (check_grads, orders 1 and
2), vmap against a Python loop, jacfwd against jacrev; then the buffer's life: every
creation function, every write path, reads after the write, views taken before it, the
plain array it stays while unwritten, and the refusals (arrays made outside).
"""

import doctest
import pickle
import warnings

import numpy as np
import pytest

import rune
from rune import buffers
from rune.buffers import Buffer, Shadowed, is_buffer

X3 = np.array([0.3, -0.7, 1.1])
BATCH = np.stack([X3, 0.5 * X3 - 0.2, np.cos(X3)])


# --------------------------------------------------------------------------
# The idioms of the issue, each with a functional twin
# --------------------------------------------------------------------------

A = np.array([[0.9, 0.2, 0.0], [-0.1, 0.8, 0.3], [0.0, 0.1, 0.7]])


def kalman(x):
    states = np.zeros((4, 3))
    for t in range(4):
        prev = states[t - 1] if t else np.ones(3)
        states[t] = A @ prev + np.sin(x) * (t + 1.0)
    return np.sum(states ** 2) + states[-1] @ x


def kalman_functional(x):
    rows, prev = [], np.ones(3)
    for t in range(4):
        prev = A @ prev + np.sin(x) * (t + 1.0)
        rows.append(prev)
    s = np.stack(rows)
    return np.sum(s ** 2) + s[-1] @ x


def cholesky_param(theta):          # theta: the 6 entries of a 3x3 lower triangle
    L = np.zeros((3, 3))
    L[np.tril_indices(3)] = theta
    return np.sum((L @ L.T) ** 2) + np.sum(np.log(np.abs(np.diag(L)) + 1.0))


def cholesky_functional(theta):
    i, j = np.tril_indices(3)
    L = np.stack([np.stack([np.sum(np.where((i == r) & (j == c), theta, 0.0))
                            for c in range(3)]) for r in range(3)])
    return np.sum((L @ L.T) ** 2) + np.sum(np.log(np.abs(np.diag(L)) + 1.0))


def nbody(f):                       # f: the 3 forces' x-components, 2-d forces
    F = np.zeros((3, 2))
    for i in range(3):
        F[i] += f[i] * np.array([1.0, -0.5])
        F[i - 1] -= 0.25 * f[i] ** 2
    return np.sum(F ** 3)


def nbody_functional(f):
    F = np.zeros((3, 2)).tolist()
    F = [np.asarray(row) for row in F]
    for i in range(3):
        F[i] = F[i] + f[i] * np.array([1.0, -0.5])
        F[i - 1] = F[i - 1] - 0.25 * f[i] ** 2
    return np.sum(np.stack(F) ** 3)


IDX = np.array([0, 2, 2, 1, 2])


def add_at(x):
    b = np.ones(4)
    np.add.at(b, IDX, np.concatenate([x, x[:2]]) ** 2)
    return np.sum(b ** 2)


def add_at_functional(x):
    v = np.concatenate([x, x[:2]]) ** 2
    b = np.ones(4) + np.stack([np.sum(np.where(IDX == k, v, 0.0)) for k in range(4)])
    return np.sum(b ** 2)


def out_buffer(x):
    buf = np.empty(3)
    np.multiply(x, np.sin(x), out=buf)
    return np.sum(buf ** 2)


def out_buffer_functional(x):
    return np.sum((x * np.sin(x)) ** 2)


def returned(x):                    # a buffer returned whole (a vector output)
    buf = np.full((2, 3), 0.5)
    buf[0] = np.cos(x)
    buf[1, 1:] += x[:2] * x[1:]
    return buf


def returned_functional(x):
    return np.stack([np.cos(x), np.concatenate([np.full(1, 0.5), 0.5 + x[:2] * x[1:]])])


IDIOMS = {
    "kalman": (kalman, kalman_functional, X3),
    "cholesky": (cholesky_param, cholesky_functional, np.array([0.5, -0.3, 0.8, 0.2, 0.1, 1.2])),
    "nbody": (nbody, nbody_functional, X3),
    "add_at": (add_at, add_at_functional, X3),
    "out": (out_buffer, out_buffer_functional, X3),
    "returned": (returned, returned_functional, X3),
}


@pytest.mark.parametrize("name", list(IDIOMS))
def test_idiom_matches_its_functional_twin_in_every_mode(name):
    f, ref, x = IDIOMS[name]
    np.testing.assert_allclose(f(x), ref(x), rtol=1e-12)
    rune.check_grads(f, x, order=2)             # jvp, vjp, and both nested: fd-checked
    jf, jr = rune.jacfwd(f)(x), rune.jacrev(f)(x)
    np.testing.assert_allclose(jf, jr, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jr, rune.jacrev(ref)(x), rtol=1e-10, atol=1e-12)
    xs = np.stack([x, 0.5 * x - 0.2, np.cos(x)])
    np.testing.assert_allclose(rune.vmap(f)(xs), np.stack([f(v) for v in xs]), rtol=1e-12)
    tangent = np.linspace(-1.0, 1.0, x.size)
    np.testing.assert_allclose(rune.jvp(f, (x,), (tangent,))[1],
                               rune.jvp(ref, (x,), (tangent,))[1], rtol=1e-10, atol=1e-12)
    if np.ndim(f(x)) == 0:
        g = rune.grad(f)
        np.testing.assert_allclose(rune.vmap(g)(xs), np.stack([g(v) for v in xs]),
                                   rtol=1e-10, atol=1e-12)
        H = rune.hessian(f)(x)
        np.testing.assert_allclose(H, H.T, rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(H, rune.hessian(ref)(x), rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(H, rune.jacrev(g)(x), rtol=1e-9, atol=1e-10)


# --------------------------------------------------------------------------
# Every creation function; every write path
# --------------------------------------------------------------------------

MAKERS = {
    "zeros": lambda: np.zeros(3), "ones": lambda: np.ones(3), "empty": lambda: np.empty(3),
    "full": lambda: np.full(3, 2.0), "zeros_like": lambda: np.zeros_like(X3),
    "ones_like": lambda: np.ones_like(X3), "empty_like": lambda: np.empty_like(X3),
    "full_like": lambda: np.full_like(X3, 2.0), "eye": lambda: np.eye(3)[0].copy(),
    "eye_2d": lambda: np.eye(3), "identity": lambda: np.identity(3),
    "array": lambda: np.array([1.0, 2.0, 3.0]), "arange": lambda: np.arange(3.0),
    "linspace": lambda: np.linspace(0.0, 1.0, 3), "array_copy": lambda: np.array(X3),
}


@pytest.mark.parametrize("name", list(MAKERS))
def test_each_creation_function_inside_makes_a_buffer_that_takes_traced_writes(name):
    make = MAKERS[name]
    outside = make()
    assert type(outside) is np.ndarray              # outside: NumPy's own, unchanged

    def f(x):
        buf = make()
        assert isinstance(buf, np.ndarray)
        assert is_buffer(buf) == bool(rune.core.active_traces()), type(buf)
        buf[...] = np.arange(buf.size, dtype=float).reshape(buf.shape)     # a plain write
        buf[0] = x[0] * x[1]
        buf[-1] += np.sin(x[2])
        return np.sum(buf ** 2)

    rune.check_grads(f, X3, order=2)
    assert type(make()) is np.ndarray


def _fd_write_reference(write):
    """NumPy's own write on plain floats (the reference value)."""
    def ref(x):
        p = np.linspace(1.0, 2.0, 4)
        write(p, x)
        return p
    return ref


WRITES = {
    "element": lambda p, x: p.__setitem__(0, x[0]),
    "slice": lambda p, x: p.__setitem__(slice(1, None), x),
    "fancy": lambda p, x: p.__setitem__(np.array([0, 3]), x[:2]),
    "mask": lambda p, x: p.__setitem__(np.array([True, False, True, False]), x[1:]),
    "iadd_element": lambda p, x: p.__setitem__(1, p[1] + x[2]),
    "iadd_slice": lambda p, x: p[:2].__iadd__(x[:2]),
    "imul": lambda p, x: p.__imul__(np.concatenate([x, x[:1]])),
    "copyto": lambda p, x: np.copyto(p, np.concatenate([x, x[:1]])),
    "copyto_where": lambda p, x: np.copyto(p, x[0], where=np.array([True, False, True, True])),
    "put": lambda p, x: np.put(p, [0, 2], x[:2]),
    "method_put": lambda p, x: p.put([1, 3], x[1:]),
    "place": lambda p, x: np.place(p, np.array([True, False, True, False]), x[:2]),
    "putmask": lambda p, x: np.putmask(p, np.array([True, False, True, True]), x),
    "put_along_axis": lambda p, x: np.put_along_axis(p, np.array([0, 1]), x[:2], axis=0),
    "fill": lambda p, x: p.fill(x[1]),
    "fill_diagonal": lambda p, x: np.fill_diagonal(p.reshape(2, 2), x[:2]),
    "flat": lambda p, x: p.flat.__setitem__(slice(1, 3), x[:2]),
    "add_out": lambda p, x: np.add(p, np.concatenate([x, x[:1]]), out=p),
    "multiply_out_where": lambda p, x: np.multiply(np.concatenate([x, x[:1]]), 2.0, out=p,
                                                   where=np.array([True, False, True, False])),
    "add_at": lambda p, x: np.add.at(p, [0, 0, 2], x),
    "maximum_at": lambda p, x: np.maximum.at(p, [1, 1, 3], x * 3.0),
    "sum_out": lambda p, x: np.sum(np.outer(x, x[:2]).reshape(3, 2)[:, :, None]
                                   * np.ones((1, 1, 2)), axis=0, out=p.reshape(2, 2)),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_each_write_path_into_a_buffer_is_numpys_write_with_derivatives(name):
    write = WRITES[name]
    ref = _fd_write_reference(write)

    def f(x):
        buf = np.linspace(1.0, 2.0, 4)
        write(buf, x)
        return buf * np.arange(1.0, 5.0)

    x = np.array([0.4, 1.3, -0.6])
    np.testing.assert_allclose(rune.vjp(f, x)[0], ref(x) * np.arange(1.0, 5.0), rtol=1e-14)
    rune.check_grads(f, x, order=2)
    np.testing.assert_allclose(rune.vmap(f)(BATCH), np.stack([f(v) for v in BATCH]))


# --------------------------------------------------------------------------
# Reads after the write; the buffer as it leaves
# --------------------------------------------------------------------------

def test_every_later_read_sees_the_traced_values():
    def f(x):
        buf = np.zeros((2, 3))
        buf[0] = x
        reads = [buf[0] * 2.0, 2.0 * buf[0], buf[0] + buf[1], np.sin(buf).sum(axis=0),
                 buf.sum(axis=0), buf.T @ np.ones(2), np.dot(np.ones(2), buf),
                 np.asarray(buf)[0], np.array(buf)[0], buf.reshape(3, 2).ravel()[:3],
                 np.stack([row for row in buf])[0], np.concatenate([buf, buf])[2],
                 rune.grad(lambda y: np.sum(y ** 2))(buf)[0] / 2.0, buf.copy()[0],
                 np.where(buf > 0, buf, -buf)[0] * np.sign(x), buf.mean(axis=0) * 2.0]
        return np.stack(reads)

    np.testing.assert_allclose(rune.jacrev(f)(X3), _reads_jacobian(), rtol=1e-12,
                               atol=1e-12)


def _reads_jacobian():
    """d read_k / d x of test_every_later_read_sees_the_traced_values, by hand."""
    eye = np.eye(3)
    scale = [2, 2, 1, None, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    out = []
    for k, s in enumerate(scale):
        out.append(np.diag(np.cos(X3)) if s is None else s * eye)
    return np.stack(out)


def test_a_written_buffer_passed_on_and_returned():
    def f(x):
        b = np.zeros(3)
        b[1:] = x[:2] ** 2
        assert type(b) is Shadowed and isinstance(b, np.ndarray)
        return b, {"sum": np.sum(b)}

    out, pullback = rune.vjp(f, X3)
    assert type(out[0]) is np.ndarray and type(out[1]["sum"]) in (np.ndarray, np.float64)
    np.testing.assert_allclose(out[0], [0.0, X3[0] ** 2, X3[1] ** 2])
    g = pullback((np.ones(3), {"sum": np.float64(1.0)}))[0]   # plain cotangents match
    np.testing.assert_allclose(g, [4 * X3[0], 4 * X3[1], 0.0])
    zero_d = rune.grad(lambda x: _zero_d(x))(1.5)
    assert zero_d == pytest.approx(2 * 1.5 + 1.0)


def _zero_d(x):
    b = np.zeros(())
    b[...] = x ** 2
    b += x
    return b


def test_views_taken_before_the_write_see_it():
    def f(x):
        L = np.zeros((2, 2))
        row, col, t, flat = L[1], L[:, 1], L.T, L.reshape(-1)
        L[1, 1] = x[0]
        row[0] = x[1]                      # a write through a view reaches L
        return np.stack([np.sum(row), np.sum(col), t[1, 0] + t[1, 1], flat[2], np.sum(L)])

    np.testing.assert_allclose(rune.jacrev(f)(np.array([2.0, 3.0])),
                               [[1, 1], [1, 0], [1, 0], [0, 1], [1, 1]])


def test_np_asarray_of_a_buffer_in_the_users_code_is_the_buffer():
    def f(x):
        b = np.zeros(3)
        a = np.asarray(b)              # NumPy: the same array, so a sees the write
        assert a is b
        b[1] = x
        return a

    np.testing.assert_allclose(rune.jacfwd(f)(2.0), [0.0, 1.0, 0.0])


def test_an_integer_buffer_written_under_vmap_is_never_read_silently():
    data = np.array([10.0, 20.0])

    def f(k, d):
        idx = np.zeros(1, int)
        idx[0] = k                     # a mapped value: the buffer is traced from here
        with pytest.raises((rune.TracerConversionError, IndexError)):
            data[idx]                  # NumPy's own indexing reads the memory: refused
        return d[idx]                  # a traced array's indexing sees the traced value

    np.testing.assert_allclose(rune.vmap(f)(np.array([1, 0]), np.stack([data, -data])),
                               [[20.0], [-10.0]])


def test_the_memory_of_a_written_buffer_is_never_read_silently():
    seen = {}

    def f(x):
        b = np.zeros(3)
        b[0] = x
        mem = np.frombuffer(memoryview(b), dtype=b.dtype)   # compiled code's view
        seen["nan"] = bool(np.all(np.isnan(mem)))
        seen["readonly"] = not b.flags.writeable
        with pytest.raises(rune.TracerConversionError, match="pickled"):
            pickle.dumps(b)
        with pytest.raises(rune.TracerConversionError):
            float(b[0])
        return np.sum(b)

    assert rune.grad(f)(2.0) == 1.0
    assert seen == {"nan": True, "readonly": True}


# --------------------------------------------------------------------------
# An unwritten buffer is the plain array it is
# --------------------------------------------------------------------------

def test_an_unwritten_buffer_behaves_as_the_plain_array():
    sp = pytest.importorskip("scipy.linalg")
    seen = {}

    def f(x):
        A = np.eye(2)
        A *= 2.0
        A[0, 1] = 1.0                                   # plain writes
        seen["type"] = type(A)
        seen["repr"] = repr(A)
        seen["results"] = (type(A * 2), type(A.sum()), type(np.sin(A)), type(A @ A))
        seen["pickle"] = type(pickle.loads(pickle.dumps(A)))
        B = np.zeros(4)
        B.put([0, 3], [5.0, 6.0])                       # NumPy's methods, plain values
        B.flat[1] = 7.0
        seen["methods"] = (B.tolist(), list(B.flat), B.flat[3], len(B.flat))
        B.fill(1.5)
        seen["fill"] = B.tolist()
        s = sp.solve(A, np.ones(2))                     # SciPy's compiled code takes it
        seen["bytes"] = A.tobytes() == np.array([[2.0, 1.0], [0.0, 2.0]]).tobytes()
        return np.sum(x * s), A

    (val, A_out), _ = rune.vjp(f, np.ones(2))[0], None
    assert seen["type"] is Buffer and seen["repr"] == repr(np.array([[2.0, 1.0], [0.0, 2.0]]))
    assert seen["results"] == (np.ndarray, np.float64, np.ndarray, np.ndarray)
    assert seen["pickle"] is np.ndarray and seen["bytes"]
    assert seen["methods"] == ([5.0, 7.0, 0.0, 6.0], [5.0, 7.0, 0.0, 6.0], 6.0, 4)
    assert seen["fill"] == [1.5] * 4
    assert type(A_out) is np.ndarray                   # what leaves is a plain array
    np.testing.assert_allclose(val, np.sum(np.linalg.solve([[2.0, 1.0], [0.0, 2.0]], [1, 1])))


def test_library_code_makes_plain_arrays():
    def f(x):
        z = np.zeros_like(x)                 # a traced value's buffer: rune's own code
        assert type(z._val) is np.ndarray    # made its plain zeros
        y = np.convolve(np.ones(2), np.ones(3))      # NumPy's own work arrays
        assert type(y) is np.ndarray
        return np.sum(z + x)

    np.testing.assert_allclose(rune.grad(f)(np.ones(2)), [1.0, 1.0])


# --------------------------------------------------------------------------
# Refusals: arrays made outside the transformation, or outside an inner one
# --------------------------------------------------------------------------

def test_arrays_made_outside_keep_refusing_and_are_not_changed():
    outside = np.zeros(3)

    def f(x):
        outside[0] = x[0]
        return np.sum(outside)

    with pytest.raises(rune.TracerConversionError):
        rune.grad(f)(X3)
    assert np.all(outside == 0)

    def g(x):
        np.add.at(outside, [0], x[0])
        return np.sum(outside)

    with pytest.raises(rune.TracerConversionError):
        rune.grad(g)(X3)
    assert np.all(outside == 0)


def test_a_buffer_of_an_outer_function_refuses_an_inner_transformations_value():
    def f(x):
        buf = np.zeros(2)

        def inner(y):
            buf[0] = y
            return y * 2.0

        with pytest.raises(rune.TracerConversionError, match="made outside that jvp"):
            rune.jvp(inner, (x[0],), (1.0,))
        assert not isinstance(buf, Shadowed) and np.all(buf.view(np.ndarray) == 0)
        buf[1] = x[1]                                # its own transformation's value
        return np.sum(buf)

    np.testing.assert_allclose(rune.grad(f)(np.array([1.0, 2.0])), [0.0, 1.0])


def test_vmap_of_grad_message_says_what_the_array_is():
    def f(x, c):
        buf = np.zeros_like(c)           # c: mapped by vmap, not differentiated by grad
        buf[0] = x[0]
        return np.sum(buf ** 2)

    with pytest.raises(ValueError) as e:
        rune.vmap(rune.grad(f), in_axes=(0, 0))(np.ones((2, 2)), np.ones((2, 2)))
    msg = str(e.value)
    assert "created outside it" not in msg and "only the enclosing vmap traces" in msg
    assert "np.zeros(shape)" in msg

    def g(x, c):                         # what the message suggests
        buf = np.zeros(c.shape)
        buf[0] = x[0]
        return np.sum(buf ** 2)

    out = rune.vmap(rune.grad(g), in_axes=(0, 0))(np.ones((2, 2)), np.ones((2, 2)))
    np.testing.assert_allclose(out, [[2.0, 0.0], [2.0, 0.0]])


# --------------------------------------------------------------------------
# Nesting: data first under vmap(grad), call constructs, integer buffers
# --------------------------------------------------------------------------

def test_vmap_of_grad_with_a_mapped_value_written_first():
    def f(theta, c):
        s = np.zeros((3, 2))
        s[0] = c                                 # only vmap traces this one
        for t in range(1, 3):
            s[t] = s[t - 1] * theta + c          # grad's value
        return np.sum(s ** 2)

    theta, C = np.array([0.5, -0.3]), np.array([[1.0, 2.0], [0.5, -1.0]])
    got = rune.vmap(rune.grad(f), in_axes=(None, 0))(theta, C)
    np.testing.assert_allclose(got, np.stack([rune.grad(f)(theta, c) for c in C]), rtol=1e-12)
    rune.check_grads(lambda th: f(th, C[0]), theta, order=2)


def _segment(x):
    b = np.zeros(2)
    b[0] = np.sin(x)
    b[1] = x * b[0]
    return np.sum(b)


@rune.custom_vjp
def _cv(x):
    return _segment(x)


def _cv_fwd(x):
    return _segment(x), x


def _cv_bwd(x, g):
    b = np.zeros(1)
    b[0] = g * (np.cos(x) + np.sin(x) + x * np.cos(x))
    return (b[0],)


_cv.defvjp(_cv_fwd, _cv_bwd)


@rune.custom_jvp
def _cj(x):
    return np.sin(x)


@_cj.defjvp
def _cj_jvp(primals, tangents):
    p, t = np.zeros(1), np.zeros(1)       # primal and tangent values in their own buffers
    p[0], t[0] = primals[0], tangents[0]
    return np.sin(p[0]), np.cos(p[0]) * t[0]


def test_buffers_inside_checkpoint_and_custom_rules():
    x, xs = 0.3, np.array([0.3, 0.6])
    exact = rune.grad(_segment)
    with warnings.catch_warnings():         # checkpoint keeps recomputing (no fallback)
        warnings.simplefilter("error", rune.PerformanceWarning)
        np.testing.assert_allclose(rune.grad(rune.checkpoint(_segment))(x), exact(x))
        np.testing.assert_allclose(rune.vmap(rune.grad(rune.checkpoint(_segment)))(xs),
                                   [exact(v) for v in xs])
        np.testing.assert_allclose(rune.hessian(rune.checkpoint(_segment))(x),
                                   rune.hessian(_segment)(x))
    np.testing.assert_allclose(rune.grad(_cv)(x), exact(x))
    np.testing.assert_allclose(rune.grad(rune.grad(_cv))(x), rune.grad(exact)(x))
    np.testing.assert_allclose(rune.grad(_cj)(x), np.cos(x))
    np.testing.assert_allclose(rune.hessian(_cj)(x), -np.sin(x))
    np.testing.assert_allclose(rune.vmap(rune.grad(_cj))(xs), np.cos(xs))


def test_integer_buffer_under_vmap_takes_mapped_indices():
    def f(k, x):
        idx = np.zeros(2, int)
        idx[0] = k
        return x[idx]

    K, Xs = np.array([0, 1]), np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(rune.vmap(f)(K, Xs), [[1.0, 1.0], [4.0, 3.0]])


def test_refused_layout_changes_and_dtype_views():
    def f(x):
        b = np.zeros(4)
        b[0] = x
        with pytest.raises(NotImplementedError, match="shape"):
            b.shape = (2, 2)
        c = np.zeros(2, complex)
        with pytest.raises(NotImplementedError, match="another dtype"):
            c.real[0] = x                   # a float64 view of a complex buffer
        assert not isinstance(c, Shadowed)  # refused before anything changed
        return np.sum(b)

    assert rune.grad(f)(1.0) == 1.0


def test_doctests_of_the_module():
    result = doctest.testmod(buffers)
    assert result.failed == 0 and result.attempted > 0


def test_a_written_buffer_passed_to_a_traced_values_method():
    """x.dot(buf): the method form reads the buffer's traced value, as np.dot(x, buf) does
    (the random-program tester found the method leaking a traced value and a wrong
    tangent)."""
    def f(x0, x1):
        c = np.full((1,), -1.3)
        c[...] = x0 * 1.5
        return x1.dot(c)

    x0, x1 = np.array([1.5]), np.array([0.36])
    out, tan = rune.jvp(f, (x0, x1), (np.ones(1), np.ones(1)))
    assert type(out) is np.float64 and abs(out - 0.81) < 1e-15
    assert abs(tan - (0.36 * 1.5 + 2.25)) < 1e-15
    rune.check_grads(f, x0, x1, order=2)


# ---- views NumPy's Python functions make of a buffer: they follow its later traced writes

_STRIDED = {
    "broadcast_to": lambda c: np.broadcast_to(c, (2,) + c.shape),
    "broadcast_arrays": lambda c: np.broadcast_arrays(c, np.ones((2,) + c.shape))[0],
    "sliding_window_view": lambda c: np.lib.stride_tricks.sliding_window_view(c, 2),
    "as_strided": lambda c: np.lib.stride_tricks.as_strided(c, (3, 2), (8, 8)),
}


@pytest.mark.parametrize("name", sorted(_STRIDED))
def test_strided_views_of_a_buffer_follow_its_traced_writes(name):
    # NumPy's functions made a plain view of the buffer's memory, which rune never writes
    # (NaN by then): the random-program tester's np.broadcast_to(c1) read NaN under jvp/vjp
    view = _STRIDED[name]

    def f(x):
        c = np.full(4, 0.5)
        v = view(c)
        c[1:3] = x * np.array([1.0, -2.0])
        c *= np.sum(np.sin(x))
        return v * 1.0

    x = np.array(0.7)
    want = f(x)          # NumPy's: the view reads the writes
    assert np.all(np.isfinite(want)) and not np.all(want == 0.5)
    np.testing.assert_allclose(rune.vjp(f, x)[0], want, rtol=1e-13)
    np.testing.assert_allclose(rune.jvp(f, (x,), (np.ones(()),))[0], want, rtol=1e-13)
    rune.check_grads(f, x, order=1)
    xs = np.array([0.3, 0.7, -0.4])
    np.testing.assert_allclose(rune.vmap(f)(xs), np.stack([f(np.array(v)) for v in xs]),
                               rtol=1e-13)     # (a batch's np.sin may take the SIMD loop)


def test_strided_views_of_plain_arrays_and_outside_are_numpys():
    a = np.arange(4.0)
    for name, view in _STRIDED.items():
        assert type(view(a)) is np.ndarray, name
    seen = []
    rune.grad(lambda x: seen.extend(type(view(np.arange(4.0) * 1.0)) for view in
                                    _STRIDED.values()) or x * 2.0)(1.0)
    assert seen == [np.ndarray] * len(_STRIDED)     # (results of arithmetic: plain arrays)

