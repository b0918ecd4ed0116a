"""lvgp.base.snapshot: a result kept while what it was computed from is unchanged."""

import copy
import pickle

import torch

from lvgp.base.snapshot import KeptResult, TensorSnapshot


def test_tensor_snapshot_compares_by_value_shape_and_dtype():
    a, b = torch.arange(3.0), torch.ones(2, dtype=torch.float64)
    snapshot = TensorSnapshot([a, b])
    assert snapshot.matches([a, b])
    a.add_(1.0)  # in place, as an optimizer would: the version changes, so do the values
    assert not snapshot.matches([a, b])
    a.sub_(1.0)
    assert snapshot.matches([a.clone(), b.clone()])  # other tensors, the same values
    assert not snapshot.matches([a])
    assert not snapshot.matches([a, b.float()])
    assert not snapshot.matches([a.reshape(1, 3), b])


def test_kept_result_is_returned_while_owners_key_and_state_are_unchanged():
    owner, other = object(), object()
    weight = torch.zeros(4)
    box = KeptResult()
    assert box.get([weight], owners=(owner,)) is None and box.value is None
    value = ["factor"]
    assert box.put(value, [weight], owners=(owner,), key=7) is value
    assert box.get([weight], owners=(owner,), key=7) is value
    assert box.get([weight], owners=(other,), key=7) is None  # a new fit's model: identity, not equality
    assert box.get([weight], owners=(owner,), key=8) is None
    assert box.get([weight], owners=(), key=7) is None
    weight[0] = 1.0
    assert box.get([weight], owners=(owner,), key=7) is None
    weight[0] = 0.0
    assert box.get([weight], owners=(owner,), key=7) is value
    # pickles and copies start empty; the original keeps its result
    assert pickle.loads(pickle.dumps(box)).value is None
    assert copy.deepcopy(box).value is None and copy.copy(box).value is None
    assert box.value is value
    box.put(None, [weight])  # None: keep nothing
    assert box.value is None
    box.put(value, [weight])
    box.clear()
    assert box.get([weight]) is None
