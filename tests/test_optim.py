"""rune.optim's gradient transformations and schedules.

The update numbers are checked against the update equations as optax and PyTorch
document them, written out here independently in plain NumPy on lists of arrays (the
gradients too: closed forms, not rune's), over several steps of a closed loop (each
step's gradient depends on the previous updates).  Where torch is importable, torch.optim
is run on the same closed loop as well.  The solvers (lbfgs, minimize) and the tutorial
are tested in tests/test_optim_solvers.py.
"""

import doctest
import pickle
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pytest

import rune
from rune import optim

STEPS = 5
EXACT = dict(rtol=1e-12, atol=1e-14)    # the same float64 operations, reordered at most


@dataclass
class Params:
    w: np.ndarray
    b: np.ndarray
    tag: str = field(default="mlp", metadata={"static": True})


class Pair(NamedTuple):
    a: np.ndarray
    n: np.ndarray          # an integer leaf: never trained


D = np.array([[1.0, 2.0], [0.5, 3.0], [4.0, 0.25]])
T = np.array([[1.0, -1.0], [2.0, 0.5], [-0.5, 0.0]])


def loss(p):
    return 0.5 * np.sum(D * (p.w - T) ** 2) + np.sum(np.cos(p.b))


def closed_form_grads(w, b):
    return [D * (w - T), -np.sin(b)]


def start(dtype=np.float64):
    return Params(np.array([[0.3, -0.2], [1.5, 0.7], [0.1, -0.9]], dtype),
                  np.array([0.4, -1.2], dtype))


def run(opt, params, steps=STEPS):
    state = opt.init(params)
    for _ in range(steps):
        updates, state = opt.update(rune.grad(loss)(params), state, params)
        params = optim.apply_updates(params, updates)
    return params, state


def run_reference(step, steps=STEPS):
    """``step(k, p, g, st) -> p``, ``k = 1, 2, ...``, on a list [w, b]; ``st`` a dict."""
    p0 = start()
    p, st = [p0.w.copy(), p0.b.copy()], {}
    for k in range(1, steps + 1):
        p = step(k, p, closed_form_grads(*p), st)
    return Params(*p)


def assert_params(got, want, **tol):
    for a, b in zip((got.w, got.b), (want.w, want.b)):
        np.testing.assert_allclose(a, b, **(tol or EXACT))


def zeros(p):
    return [np.zeros_like(x) for x in p]


# --------------------------------------------------------------------------
# the documented update equations, a few steps, by hand
# --------------------------------------------------------------------------

def test_adam_bias_corrected_moments():
    lr, b1, b2, eps = 0.05, 0.8, 0.95, 1e-3

    def step(k, p, g, st):
        m = st.setdefault("m", zeros(p))
        v = st.setdefault("v", zeros(p))
        for i in range(2):
            m[i] = b1 * m[i] + (1 - b1) * g[i]
            v[i] = b2 * v[i] + (1 - b2) * g[i] ** 2
            m_hat, v_hat = m[i] / (1 - b1 ** k), v[i] / (1 - b2 ** k)
            p[i] = p[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
        return p
    got, state = run(optim.adam(lr, b1=b1, b2=b2, eps=eps), start())
    assert_params(got, run_reference(step))
    adam_state = state[0]
    assert int(adam_state.count) == STEPS and isinstance(adam_state.mu, Params)


def test_adamw_decoupled_decay_with_a_mask():
    lr, wd = 0.05, 0.3

    def step(k, p, g, st):
        m = st.setdefault("m", zeros(p))
        v = st.setdefault("v", zeros(p))
        for i in range(2):
            m[i] = 0.9 * m[i] + 0.1 * g[i]
            v[i] = 0.999 * v[i] + 0.001 * g[i] ** 2
            update = (m[i] / (1 - 0.9 ** k)) / (np.sqrt(v[i] / (1 - 0.999 ** k)) + 1e-8)
            decay = wd * p[i] if i == 0 else 0.0          # only w decays
            p[i] = p[i] - lr * (update + decay)
        return p
    want = run_reference(step)
    for mask in (lambda path: path == "params.w", Params(w=True, b=False)):
        got, _ = run(optim.adamw(lr, weight_decay=wd, mask=mask), start())
        assert_params(got, want)
    all_decay, _ = run(optim.adamw(lr, weight_decay=wd), start())
    assert not np.allclose(all_decay.b, want.b)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum_as_pytorch_writes_it(nesterov):
    lr, mom = 0.1, 0.9

    def step(k, p, g, st):       # torch.optim.SGD, dampening 0: buf = g at the first step
        for i in range(2):
            buf = g[i] if k == 1 else mom * st[i] + g[i]
            st[i] = buf
            d = g[i] + mom * buf if nesterov else buf
            p[i] = p[i] - lr * d
        return p
    got, _ = run(optim.sgd(lr, momentum=mom, nesterov=nesterov), start())
    assert_params(got, run_reference(step))


def test_plain_sgd():
    got, _ = run(optim.sgd(0.1), start(), steps=1)
    g = closed_form_grads(start().w, start().b)
    assert_params(got, Params(start().w - 0.1 * g[0], start().b - 0.1 * g[1]))


@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("momentum", [None, 0.5])
@pytest.mark.parametrize("eps_in_sqrt", [True, False])
def test_rmsprop(centered, momentum, eps_in_sqrt):
    lr, decay, eps = 0.02, 0.7, 1e-2        # a large eps: its place matters

    def step(k, p, g, st):
        for i in range(2):
            v = st[("v", i)] = decay * st.get(("v", i), 0.0) + (1 - decay) * g[i] ** 2
            if centered:
                m = st[("m", i)] = decay * st.get(("m", i), 0.0) + (1 - decay) * g[i]
                v = v - m ** 2
            denom = np.sqrt(v + eps) if eps_in_sqrt else np.sqrt(v) + eps
            d = g[i] / denom
            if momentum is not None:   # torch: buf = momentum * buf + g / denom
                d = st[("buf", i)] = momentum * st.get(("buf", i), 0.0) + d
            p[i] = p[i] - lr * d
        return p
    opt = optim.rmsprop(lr, decay=decay, eps=eps, eps_in_sqrt=eps_in_sqrt, centered=centered,
                        momentum=momentum)
    assert_params(run(opt, start())[0], run_reference(step))


@pytest.mark.parametrize("initial, eps", [(0.1, 1e-7), (0.0, 0.0), (0.5, 1e-1)])
def test_adagrad(initial, eps):
    lr = 0.3

    def step(k, p, g, st):      # eps = 0: PyTorch's Adagrad (eps outside the root) agrees
        for i in range(2):
            s = st[i] = st.get(i, initial) + g[i] ** 2
            p[i] = p[i] - lr * g[i] / np.sqrt(s + eps)
        return p
    opt = optim.adagrad(lr, initial_accumulator_value=initial, eps=eps)
    assert_params(run(opt, start())[0], run_reference(step))


def test_lion_with_decay():
    lr, b1, b2, wd = 0.01, 0.9, 0.99, 0.1

    def step(k, p, g, st):      # Chen et al. 2023, Algorithm 2
        for i in range(2):
            m = st.get(i, 0.0)
            c = b1 * m + (1 - b1) * g[i]
            p[i] = p[i] - lr * (np.sign(c) + wd * p[i])
            st[i] = b2 * m + (1 - b2) * g[i]
        return p
    assert_params(run(optim.lion(lr, b1, b2, weight_decay=wd), start())[0], run_reference(step))


def test_clip_by_global_norm_then_sgd():
    max_norm, lr = 1.0, 0.1

    def step(k, p, g, st):
        norm = np.sqrt(sum(np.sum(x ** 2) for x in g))
        factor = min(1.0, max_norm / norm)
        return [x - lr * factor * gx for x, gx in zip(p, g)]
    opt = optim.chain(optim.clip_by_global_norm(max_norm), optim.sgd(lr))
    assert_params(run(opt, start())[0], run_reference(step))
    small = {"a": np.array([0.3, 0.4])}          # below the norm: unchanged
    out = optim.clip_by_global_norm(1.0).update(small, optim.EmptyState())[0]
    np.testing.assert_array_equal(out["a"], small["a"])


def test_a_schedule_is_called_with_the_count_of_earlier_updates():
    seen = []

    def schedule(count):
        seen.append(int(count))
        return 0.1 / (1 + int(count))

    def step(k, p, g, st):
        return [x - 0.1 / k * gx for x, gx in zip(p, g)]
    got, _ = run(optim.sgd(schedule), start())
    assert seen == list(range(STEPS))
    assert_params(got, run_reference(step))
    got, _ = run(optim.adam(optim.constant_schedule(0.05)), start())
    assert_params(got, run(optim.adam(0.05), start())[0])


# --------------------------------------------------------------------------
# schedules against their formulas
# --------------------------------------------------------------------------

def test_schedules_formulas():
    k = np.arange(0, 30)
    np.testing.assert_allclose(optim.cosine_decay_schedule(2.0, 20, alpha=0.1)(k),
                               2.0 * (0.9 * 0.5 * (1 + np.cos(np.pi * np.minimum(k, 20) / 20))
                                      + 0.1), **EXACT)
    np.testing.assert_allclose(optim.exponential_decay(1.0, 5, 0.5, transition_begin=3)(k),
                               0.5 ** (np.maximum(k - 3, 0) / 5), **EXACT)
    np.testing.assert_allclose(optim.exponential_decay(1.0, 5, 0.5, staircase=True,
                                                       end_value=0.2)(k),
                               np.maximum(0.5 ** np.floor(k / 5), 0.2), **EXACT)
    warm = optim.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=5, decay_steps=25,
                                              end_value=0.1)
    want = np.where(k < 5, k / 5, 0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * np.minimum(k - 5, 20)
                                                                 / 20)))
    np.testing.assert_allclose(warm(k), want, **EXACT)
    assert warm(5) == 1.0 and warm(25) == pytest.approx(0.1) and type(warm(3)) is float
    assert optim.warmup_cosine_decay_schedule(0.0, 1.0, 0, 10)(0) == 1.0
    np.testing.assert_allclose(optim.linear_schedule(1.0, 0.0, 10, 2)(k),
                               1.0 - np.clip((k - 2) / 10, 0, 1), **EXACT)


def test_schedule_errors():
    with pytest.raises(ValueError, match="decay_steps .* must exceed warmup_steps"):
        optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 5)
    with pytest.raises(TypeError, match="decay_steps must be an int"):
        optim.cosine_decay_schedule(1.0, 2.5)
    with pytest.raises(ValueError, match="transition_steps must be positive"):
        optim.exponential_decay(1.0, 0, 0.5)
    with pytest.raises(ValueError, match="one boundary fewer"):
        optim.join_schedules([optim.constant_schedule(1.0)], [3])


# --------------------------------------------------------------------------
# dtypes, kinds, fixed leaves
# --------------------------------------------------------------------------

ALL = {
    "sgd": lambda lr: optim.sgd(lr, momentum=0.9, nesterov=True),
    "adam": lambda lr: optim.adam(lr),
    "adamw": lambda lr: optim.adamw(lr, weight_decay=0.1),
    "rmsprop": lambda lr: optim.rmsprop(lr, centered=True, momentum=0.5),
    "adagrad": lambda lr: optim.adagrad(lr),
    "lion": lambda lr: optim.lion(lr),
    "clipped": lambda lr: optim.chain(optim.clip_by_global_norm(0.5), optim.adam(lr)),
}


@pytest.mark.parametrize("name", sorted(ALL))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_each_leaf_keeps_its_dtype(name, dtype):
    sched = optim.warmup_cosine_decay_schedule(0.0, 0.01, 2, 10)     # np.float64 inside
    params = {"p": start(dtype), "s": 1.5, "x64": np.array([1.0, 2.0]),
              "pair": Pair(np.ones(2, dtype), np.arange(3))}

    def f(q):
        return loss(q["p"]) + q["s"] ** 2 + np.sum(q["x64"] ** 2) + np.sum(q["pair"].a ** 3)
    opt = ALL[name](sched)
    state = opt.init(params)
    start_loss = float(f(params))
    for _ in range(6):
        updates, state = opt.update(rune.grad(f)(params), state, params)
        assert updates["p"].w.dtype == dtype and updates["x64"].dtype == np.float64
        params = optim.apply_updates(params, updates)
    assert params["p"].w.dtype == dtype and params["pair"].a.dtype == dtype
    assert type(params["s"]) is float and params["x64"].dtype == np.float64
    np.testing.assert_array_equal(params["pair"].n, np.arange(3))   # not trained
    assert params["pair"].n.dtype == np.arange(3).dtype
    assert float(f(params)) < start_loss
    for leaf in rune.tree.leaves(state):
        assert np.asarray(leaf).dtype in (np.dtype(dtype), np.float64, np.int64)


def test_adam_state_in_the_leaf_dtype():
    params = start(np.float32)
    _, state = run(optim.adam(0.01), params, steps=2)
    assert state[0].mu.w.dtype == np.float32 and state[0].nu.b.dtype == np.float32


# --------------------------------------------------------------------------
# the state is a plain record: pickle, np.savez
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ALL))
def test_state_pickles_and_training_resumes_identically(name, tmp_path):
    params, state = run(ALL[name](0.01), start(), steps=3)
    clone = pickle.loads(pickle.dumps(state))
    assert rune.tree.structure(clone) == rune.tree.structure(state)
    opt = ALL[name](0.01)
    g = rune.grad(loss)(params)
    u1, s1 = opt.update(g, state, params)
    u2, s2 = opt.update(g, clone, params)
    for a, b in zip(rune.tree.leaves((u1, s1)), rune.tree.leaves((u2, s2))):
        np.testing.assert_array_equal(a, b)
    # the leaves through np.savez, the structure from a fresh init
    np.savez(tmp_path / "state.npz", *rune.tree.leaves(state))
    with np.load(tmp_path / "state.npz") as z:
        loaded = [z[f"arr_{i}"] for i in range(len(z.files))]
    back = rune.tree.unflatten(rune.tree.structure(opt.init(start())), loaded)
    u3, _ = opt.update(g, back, params)
    for a, b in zip(rune.tree.leaves(u1), rune.tree.leaves(u3)):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------
# derivatives through the updates
# --------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda lr: optim.sgd(lr, momentum=0.9, nesterov=True),
                                  lambda lr: optim.adam(lr, b1=0.5, b2=0.6),
                                  lambda lr: optim.chain(optim.clip_by_global_norm(2.0),
                                                         optim.rmsprop(lr))],
                         ids=["sgd", "adam", "clip-rmsprop"])
def test_check_grads_through_unrolled_steps(make):
    def final_loss(w, b, lr):
        p = Params(w, b)
        opt = make(lr)
        state = opt.init(p)
        for _ in range(3):
            updates, state = opt.update(rune.grad(loss)(p), state, p)
            p = optim.apply_updates(p, updates)
        return loss(p)
    p0 = start()
    rune.check_grads(final_loss, p0.w, p0.b, 0.05, order=1, modes=("fwd", "rev"))


def test_vmap_of_training_steps_against_a_loop():
    """Many small models trained at once: vmap over the parameters, clipping included."""
    opt = optim.chain(optim.clip_by_global_norm(1.0), optim.adamw(0.1, weight_decay=0.1))

    def train(w, b):
        p = Params(w, b)
        state = opt.init(p)
        for _ in range(3):
            updates, state = opt.update(rune.grad(loss)(p), state, p)
            p = optim.apply_updates(p, updates)
        return p.w, p.b
    rng = np.random.default_rng(1)
    ws, bs = rng.normal(size=(4, 3, 2)), rng.normal(size=(4, 2))
    got = rune.vmap(train)(ws, bs)
    for i in range(4):
        want = train(ws[i], bs[i])
        np.testing.assert_allclose(got[0][i], want[0], **EXACT)
        np.testing.assert_allclose(got[1][i], want[1], **EXACT)


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

def test_mismatched_gradients_name_the_place():
    opt = optim.adam(0.1)
    state = opt.init(start())
    with pytest.raises(ValueError, match="different structures: at updates"):
        opt.update({"w": np.ones((3, 2))}, state, start())
    with pytest.raises(ValueError, match="different structures"):
        optim.apply_updates(start(), [np.ones((3, 2)), np.ones(2)])


def test_bad_inputs_get_clear_errors():
    with pytest.raises(TypeError, match=r"params\['z'\] is complex"):
        optim.adam(0.1).init({"z": np.ones(2, complex)})
    with pytest.raises(TypeError, match=r"params\[0\] is a str"):
        optim.sgd(0.1, momentum=0.9).init(["abc"])
    with pytest.raises(TypeError, match="learning_rate must be a real number"):
        optim.adam("0.1")
    with pytest.raises(ValueError, match=r"b1 must be in \[0.0, 1.0\)"):
        optim.adam(0.1, b1=1.0)
    with pytest.raises(ValueError, match="max_norm must be in"):
        optim.clip_by_global_norm(0.0)
    with pytest.raises(ValueError, match="nesterov=True needs a momentum"):
        optim.sgd(0.1, nesterov=True)
    with pytest.raises(TypeError, match="argument 1 is a function"):
        optim.chain(optim.sgd(0.1), lambda g: g)
    opt = optim.adamw(0.1)
    with pytest.raises(ValueError, match="needs the parameters"):
        opt.update(start(), opt.init(start()))
    bad_mask = optim.adamw(0.1, mask=lambda path: "yes")
    with pytest.raises(TypeError, match="gave str 'yes' for params.w; it must give a bool"):
        bad_mask.init(start())
    with pytest.raises(ValueError, match="the mask is not a tree prefix of the parameters"):
        optim.adamw(0.1, mask={"w": True}).init(start())
    with pytest.raises(TypeError, match="tree of bools"):
        optim.adamw(0.1, mask={"w": 1})


def test_inputs_are_not_mutated():
    params = start()
    grads = rune.grad(loss)(params)
    before = [x.copy() for x in rune.tree.leaves((params, grads))]
    for name in ALL:
        opt = ALL[name](0.1)
        state = opt.init(params)
        s_before = [np.copy(x) for x in rune.tree.leaves(state)]
        updates, new_state = opt.update(grads, state, params)
        optim.apply_updates(params, updates)
        for a, b in zip(rune.tree.leaves(state), s_before):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(rune.tree.leaves((params, grads)), before):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------
# against torch.optim, where torch is installed
# --------------------------------------------------------------------------

TORCH_CASES = {
    "sgd-nesterov": (lambda: optim.sgd(0.1, momentum=0.9, nesterov=True),
                     lambda torch, ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9,
                                                       nesterov=True)),
    "adam": (lambda: optim.adam(0.05, b1=0.8, b2=0.95, eps=1e-3),
             lambda torch, ps: torch.optim.Adam(ps, lr=0.05, betas=(0.8, 0.95), eps=1e-3)),
    "adamw": (lambda: optim.adamw(0.05, weight_decay=0.3),
              lambda torch, ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.3)),
    "rmsprop": (lambda: optim.rmsprop(0.02, decay=0.7, eps=1e-2, eps_in_sqrt=False,
                                      centered=True, momentum=0.5),
                lambda torch, ps: torch.optim.RMSprop(ps, lr=0.02, alpha=0.7, eps=1e-2,
                                                      centered=True, momentum=0.5)),
    "adagrad": (lambda: optim.adagrad(0.3, initial_accumulator_value=0.0, eps=0.0),
                lambda torch, ps: torch.optim.Adagrad(ps, lr=0.3, eps=0.0)),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_against_torch_optim(name):
    torch = pytest.importorskip("torch")
    ours, theirs = TORCH_CASES[name]
    p0 = start()
    tw = torch.tensor(p0.w.copy(), dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(p0.b.copy(), dtype=torch.float64, requires_grad=True)
    topt = theirs(torch, [tw, tb])
    for _ in range(STEPS):
        g = closed_form_grads(tw.detach().numpy(), tb.detach().numpy())
        tw.grad, tb.grad = torch.tensor(g[0]), torch.tensor(g[1])
        topt.step()
    got, _ = run(ours(), p0)
    assert_params(got, Params(tw.detach().numpy(), tb.detach().numpy()), rtol=1e-10,
                  atol=1e-12)


def test_docstring_examples_run():
    from rune.optim import directions, optimizers, schedules, transforms
    for module in (optim, transforms, directions, optimizers, schedules):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
