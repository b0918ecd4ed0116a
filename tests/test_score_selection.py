"""The GP classifier's novelty score chosen by held-out known classes (issue 57): the in-scope side's
leave-one-out scores are each score's own formula applied to the reference (checked against the score
functions on the same rows), and the choice is a loop written out by hand (its AUROCs to 1e-12)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import roc_auc_score

from lvgp import LBFGS, LDKGPClassifier
from lvgp.base.novelty import (
    LEAVE_ONE_OUT_SCORES,
    NoveltyReference,
    centred_energy_novelty,
    class_reference_energies,
    class_variance_ratio,
    energy_class_variance_novelty,
    energy_variance_novelty,
    entropy_variance_novelty,
    latent_energy,
    leave_one_out_novelty,
    lifted_energy_novelty,
    normalized_entropy,
    probability_novelty,
    variance_novelty,
)
from lvgp.models.gpc import choose_novelty_score

#: five classes on a ring of ten words, each class four neighbours: a held-out class shares its words
#: with the two classes beside it, so no score tells it apart perfectly
RING = "good great fine nice bad awful poor dull tax bank".split()


def _corpus(per_class: int = 8, seed: int = 0) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for k in range(5):
        words = [RING[(2 * k + j) % len(RING)] for j in range(4)]
        texts += [" ".join(rng.choice(words, 3)) for _ in range(per_class)]
        labels += [f"c{k}"] * per_class
    return texts, np.array(labels)


def _classifier(**params) -> LDKGPClassifier:
    return LDKGPClassifier(class_hyperparameters="shared", optimizer=LBFGS(max_iter=20), random_state=0, **params)


def test_leave_one_out_novelty_scores_the_reference_as_new_texts():
    """Rows scored as new texts against a reference made of those very rows give the reference's own
    leave-one-out scores, for every kind (the quantile kinds count each row among all, itself too)."""
    rng = np.random.default_rng(0)
    n, c = 9, 3
    mean, var, prior = rng.normal(size=(n, c)), rng.uniform(0.1, 1.2, (n, c)), rng.uniform(0.8, 1.2, (n, c))
    proba = rng.dirichlet(np.ones(c), size=n)
    class_energy = class_reference_energies(latent_energy(mean), np.arange(n) % c, c)  # 3 rows a class
    reference = NoveltyReference(
        normalized_entropy(proba),
        -variance_novelty(var, prior),
        -latent_energy(mean),
        class_variance_ratio(mean, var, prior),
        class_energy,
        -centred_energy_novelty(mean, proba, class_energy),
        -lifted_energy_novelty(mean, proba, class_energy, float(latent_energy(mean).mean())),
    )
    want = {
        "energy": latent_energy(mean),
        "entropy": probability_novelty(proba, "entropy"),
        "variance": variance_novelty(var, prior),
        "class-variance": -class_variance_ratio(mean, var, prior),
        "entropy-variance": entropy_variance_novelty(proba, var, prior, reference),
        "energy-variance": energy_variance_novelty(mean, var, prior, reference),
        "energy-class-variance": energy_class_variance_novelty(mean, var, prior, reference),
        "centred-energy": centred_energy_novelty(mean, proba, class_energy),
        "lifted-energy": lifted_energy_novelty(mean, proba, class_energy, float(latent_energy(mean).mean())),
    }
    assert set(want) == set(LEAVE_ONE_OUT_SCORES)
    for kind, values in want.items():
        np.testing.assert_allclose(leave_one_out_novelty(reference, kind, c), values, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="kind must be one of"):
        leave_one_out_novelty(reference, "max-probability", c)
    with pytest.raises(ValueError, match="n_classes must be at least 2"):
        leave_one_out_novelty(reference, "entropy", 1)
    with pytest.raises(ValueError, match="'centred-energy' needs reference.centred_energy"):
        leave_one_out_novelty(reference._replace(centred_energy=None), "centred-energy", c)
    with pytest.raises(ValueError, match="'lifted-energy' needs reference.lifted_energy"):
        leave_one_out_novelty(reference._replace(lifted_energy=None), "lifted-energy", c)


def test_choose_novelty_score_is_the_loop_written_out():
    X, y = _corpus()
    candidates = ("energy", "variance", "energy-class-variance")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        passes = []
        latent_and_prior = LDKGPClassifier._latent_and_prior

        def counted(self, *a, **k):
            passes.append(a)
            return latent_and_prior(self, *a, **k)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(LDKGPClassifier, "_latent_and_prior", counted)
            choice = choose_novelty_score(_classifier(), X, y, candidates, n_draws=2, random_state=3)
        assert len(passes) == 2  # a draw's held-out texts: one latent pass for every candidate
        again = choose_novelty_score(_classifier(), X, y, candidates, n_draws=2, random_state=3)
        by_hand: dict[str, list[float]] = {k: [] for k in candidates}
        for hold in choice.held_out:
            assert len(hold) == 1  # a quarter of 5 classes
            out = np.isin(y, hold)
            model = clone(_classifier()).fit([X[i] for i in np.flatnonzero(~out)], y[~out])
            ref = model.novelty_reference()

            def share_below(v, values):
                return np.array([(np.sum(values < x) + 0.5 * np.sum(values == x)) / len(values) for x in v])

            inside = {
                "energy": -ref.energy,
                "variance": -ref.variance,
                "energy-class-variance": -(
                    share_below(ref.energy, ref.energy) + share_below(ref.class_variance, ref.class_variance)
                )
                / 2,
            }
            for kind in candidates:
                outside = model.set_params(novelty_score=kind).score_samples([X[i] for i in np.flatnonzero(out)])
                scores = np.concatenate([inside[kind], outside])
                flags = np.r_[np.zeros(int((~out).sum())), np.ones(int(out.sum()))]
                by_hand[kind].append(roc_auc_score(flags, -scores))
    assert [h.tolist() for h in choice.held_out] == [h.tolist() for h in again.held_out]
    for kind in candidates:
        assert choice.aurocs[kind] == pytest.approx(np.mean(by_hand[kind]), abs=1e-12)
    assert len(set(choice.aurocs.values())) == 3 and 0.5 < min(choice.aurocs.values()) < max(choice.aurocs.values()) < 1
    assert choice.score == max(candidates, key=choice.aurocs.__getitem__)
    # one candidate: itself, whatever its AUROC
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert choose_novelty_score(_classifier(), X, y, ["variance"], n_draws=1, random_state=0).score == "variance"


def test_choose_novelty_score_refuses_what_it_cannot_do():
    X, y = _corpus(per_class=3)
    with pytest.raises(ValueError, match="candidates must be among"):
        choose_novelty_score(_classifier(), X, y, ["max-probability"])
    with pytest.raises(ValueError, match="inference='dirichlet'"):
        choose_novelty_score(_classifier(inference="laplace"), X, y)
    with pytest.raises(ValueError, match="y has 2 classes; holding some out needs at least 3"):
        choose_novelty_score(_classifier(), X[:6], y[:6])
    with pytest.raises(ValueError, match="X has 15 texts and y 14 labels"):
        choose_novelty_score(_classifier(), X, y[:-1])
    with pytest.raises(ValueError, match="n_draws must be a positive integer"):
        choose_novelty_score(_classifier(), X, y, n_draws=0)
    with pytest.raises(ValueError, match=r"held_out_fraction must be in \(0, 1\)"):
        choose_novelty_score(_classifier(), X, y, held_out_fraction=1.0)
    with pytest.raises(ValueError, match="candidates must name at least one"):
        choose_novelty_score(_classifier(), X, y, [])


def test_held_out_words_pass_quietly_and_draws_that_cannot_choose_say_so():
    """The held-out classes' unseen words and empty texts are what the draws are made of: no warning for
    them. Classes that share no word make every held-out text new to every score: every candidate's
    AUROC is 1 in every draw, and a warning says the first candidate is returned by default. Where the
    classes share words (the ring), the draws differ and nothing is said."""
    disjoint = ["alpha beta", "beta gamma", "delta epsilon", "epsilon zeta", "eta theta", "theta iota"]
    X = [text for text in disjoint for _ in range(2)]
    y = np.repeat(["a", "b", "c"], 4)
    candidates = ["energy", "variance"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        choice = choose_novelty_score(_classifier(), X, y, candidates, n_draws=2, random_state=0)
    kinds = [w.category.__name__ for w in caught]
    assert "UnseenWordsWarning" not in kinds and "EmptyDocumentsWarning" not in kinds, kinds
    ties = [str(w.message) for w in caught if "cannot tell them apart" in str(w.message)]
    assert len(ties) == 1 and "'energy', the first candidate" in ties[0] and "2 draws (1.000, 1.000)" in ties[0]
    assert choice.score == "energy" and choice.aurocs == {"energy": 1.0, "variance": 1.0}
    ring, labels = _corpus()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        choose_novelty_score(_classifier(), ring, labels, candidates, n_draws=2, random_state=3)
    assert not [w for w in caught if "cannot tell them apart" in str(w.message)]
