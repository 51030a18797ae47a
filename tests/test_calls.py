"""The one dispatch path for call-like constructs (issue 9 item 2): ``bind_call`` hands a
``Call`` to the trace's ``process_call``; a new kind of call is one subclass with
``reverse``, ``forward`` and ``batched``, and composes with every transformation."""

import pathlib
import re

import numpy as np
import pytest

import rune
from rune.batching import BatchTrace, vmap_flat
from rune.calls import Call, bind_call
from rune.forward import ForwardTrace
from rune.tape import ReverseTrace

SRC = pathlib.Path(rune.__file__).parent


@pytest.mark.parametrize("trace_cls", [ReverseTrace, ForwardTrace, BatchTrace])
def test_every_trace_class_has_process_call(trace_cls):
    assert "process_call" in vars(trace_cls)


@pytest.mark.parametrize("module", ["custom.py", "checkpoint.py", "calls.py"])
def test_call_kinds_do_not_test_which_trace_they_meet(module):
    text = (SRC / module).read_text()
    assert not re.search(r"isinstance\(\s*\w*trace\w*\s*,", text, re.IGNORECASE)
    assert not re.search(r"isinstance\([^)]*,\s*\(?(Reverse|Forward|Batch)Trace\b", text)


class Doubling(Call):
    """A call kind written against the protocol alone: ``fun`` with the derivative 2
    (whatever ``fun`` computes), in every mode."""

    kind = "doubling"

    def reverse(self, trace, vals, groups):
        outs = bind_call(self, vals)

        def pull(ct_full, prevs):
            c = 2.0 * ct_full[0]
            return [c if prevs[0] is None else prevs[0] + c]

        return outs, pull

    def forward(self, trace, primals, tangents):
        return bind_call(self, primals), [2.0 * tangents[0]]

    def batched(self, bdims, trace):
        return Doubling(vmap_flat(self.fun, bdims, trace.size, trace.strict, self.name),
                        self.name)


def doubling(x):
    return bind_call(Doubling(lambda v: (np.sin(v),), "doubling"), [x])[0]


X = np.array([0.3, -1.2, 2.0])


def test_a_new_call_kind_under_grad_jvp_vmap_and_their_compositions():
    np.testing.assert_allclose(doubling(X), np.sin(X))
    np.testing.assert_allclose(rune.grad(lambda x: np.sum(doubling(x) ** 2))(X),
                               4.0 * np.sin(X))
    _, t = rune.jvp(doubling, (X,), (np.ones(3),))
    np.testing.assert_allclose(t, np.full(3, 2.0))
    batch = np.stack([X, 2 * X])
    np.testing.assert_allclose(rune.vmap(doubling)(batch), np.sin(batch))
    np.testing.assert_allclose(rune.jacrev(doubling)(X), 2.0 * np.eye(3))
    np.testing.assert_allclose(rune.jacfwd(doubling)(X), 2.0 * np.eye(3))
    np.testing.assert_allclose(
        rune.vmap(rune.grad(lambda x: np.sum(doubling(x) ** 2)))(batch), 4.0 * np.sin(batch))
    np.testing.assert_allclose(
        rune.grad(lambda x: np.sum(rune.vmap(doubling)(x) ** 2))(batch), 4.0 * np.sin(batch))
