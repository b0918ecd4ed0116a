"""The variational GP classifier's budget (Rule 37, ``benchmarks/README.md``): batches of ``batch_size`` texts
(default 1,024), for ``max_epochs`` epochs or the fewest whole epochs that hold ``max_steps`` steps, whichever
ends first; a budget field the user sets without the other is the budget alone. Checked against a loop that
counts the steps, the steps a fit takes, and the old default (full batches, 200 epochs) where a batch holds
every text."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from lvgp import EarlyStopping, MiniBatch
from lvgp.models.gpc import LDKGPClassifier
from lvgp.models.gpc import inference as gpc_inference
from lvgp.models.gpc.inference import epoch_budget

from .test_gpc import three_classes

DEFAULT = LDKGPClassifier._optimizer_defaults[1]


def epochs_by_counting(n: int, batch: int, max_steps: int | None, max_epochs: int | None) -> int:
    """Whole epochs, each of the batches ``range(0, n, batch)``, until a budget is spent (``None``: no cap)."""
    steps = epochs = 0
    while (max_epochs is None or epochs < max_epochs) and (max_steps is None or steps < max_steps):
        steps += len(range(0, n, batch))
        epochs += 1
    return epochs


def test_the_default_is_batches_of_1024_for_400_steps_or_200_epochs():
    assert (DEFAULT.batch_size, DEFAULT.max_steps, DEFAULT.max_epochs) == (1024, 400, 200)
    assert epoch_budget(1000, 1024, None, DEFAULT) == (200, "max_epochs")  # one batch: the old default
    assert epoch_budget(2048, 1024, None, DEFAULT) == (200, "max_epochs")  # 400 steps either way
    assert epoch_budget(2049, 1024, None, DEFAULT) == (134, "max_steps")
    assert epoch_budget(15000, 1024, None, DEFAULT) == (27, "max_steps")


@pytest.mark.parametrize("n, batch", [(1, 1), (7, 3), (100, 16), (1000, 1024), (4000, 1024), (15000, 1024)])
def test_the_budget_is_the_epochs_a_loop_counts(n, batch):
    for steps, epochs in itertools.product([1, 5, 13, 400], [1, 3, 40, 200]):
        given = {
            "neither": None,
            "both": MiniBatch(max_steps=steps, max_epochs=epochs),
            "steps": MiniBatch(max_steps=steps),
            "epochs": MiniBatch(max_epochs=epochs),
        }
        filled = DEFAULT.replace(max_steps=steps, max_epochs=epochs)
        for which, user in given.items():
            counted = epochs_by_counting(
                n,
                batch,
                None if which == "epochs" else steps,
                None if which == "steps" else epochs,
            )
            got, name = epoch_budget(n, batch, user, filled)
            assert got == counted, (which, steps, epochs)
            if which in ("steps", "epochs"):
                assert name == f"max_{which}"


def test_a_fit_takes_the_steps_of_its_budget_and_says_which_ended_it(monkeypatch):
    x, y = three_classes(80, 0)
    steps = []
    original = gpc_inference.natural_gradient_step
    monkeypatch.setattr(gpc_inference, "natural_gradient_step", lambda ngd: (steps.append(1), original(ngd))[1])
    clf = LDKGPClassifier(
        inference="variational", num_inducing=8, optimizer=MiniBatch(batch_size=16, max_steps=12), random_state=0
    )
    with pytest.warns(ConvergenceWarning, match=r"did not converge in 3 epochs, the budget max_steps ended it"):
        clf.fit(x, y)
    # 5 batches an epoch: 12 steps fit in three whole epochs (15 steps)
    assert (clf.n_iter_, len(clf.loss_curve_), len(steps)) == (3, 3, 15)
    steps.clear()
    clf.set_params(optimizer=MiniBatch(batch_size=16, max_steps=12, max_epochs=2))
    with pytest.warns(ConvergenceWarning, match=r"in 2 epochs, the budget max_epochs ended it"):
        clf.fit(x, y)
    assert (clf.n_iter_, len(steps)) == (2, 10)


@pytest.mark.filterwarnings("ignore::lvgp.warnings.UnseenWordsWarning")
def test_where_a_batch_holds_every_text_the_default_is_the_full_batch_fit_to_the_bit():
    x, y = three_classes(45, 1)
    fits = []
    for optimizer in (None, MiniBatch(batch_size=None, max_epochs=200)):
        clf = LDKGPClassifier(inference="variational", num_inducing=8, optimizer=optimizer, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits.append(clf.fit(x[:30], y[:30]))
    default, full = fits
    assert default.n_iter_ == full.n_iter_ and default.loss_curve_ == full.loss_curve_
    np.testing.assert_array_equal(default.predict_proba(x[30:]), full.predict_proba(x[30:]))


def test_a_validation_interval_beyond_the_budget_in_epochs_is_refused_by_name():
    """The estimator's check before the fit reads ``max_epochs``; the epochs of ``max_steps`` need the texts:
    60 held-out-fit texts in batches of 16 make 4 steps an epoch, 12 steps three epochs."""
    x, y = three_classes(80, 0)
    clf = LDKGPClassifier(
        inference="variational",
        num_inducing=8,
        optimizer=MiniBatch(batch_size=16, max_steps=12),
        early_stopping=EarlyStopping(validation_interval=5),
        random_state=0,
    )
    with pytest.raises(
        ValueError, match=r"validation_interval=5 exceeds the fit's budget of 3 epochs \(max_steps=12, 60"
    ):
        clf.fit(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.set_params(early_stopping=EarlyStopping(validation_interval=3)).fit(x, y)
    assert clf.best_iter_ == 3 and len(clf.validation_curve_) == 1
