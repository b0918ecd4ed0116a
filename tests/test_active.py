"""The active-learning study (issue 57): BALD against a loop over texts and draws, the acquisitions
against the scores they are made of, and ``lvgp compare active`` end to end on a toy corpus with a
tiny random encoder."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch

from lvgp import LBFGS, LDKGPClassifier
from lvgp.base.novelty import probability_novelty
from lvgp.experiments.active import BALD_SAMPLES, EPIG_SAMPLES, acquisition_scores, bald, epig


def test_bald_is_the_loop_over_texts_and_draws():
    rng = np.random.default_rng(0)
    mean, var = rng.normal(size=(4, 3)), rng.uniform(0.1, 2.0, size=(4, 3))
    eps = np.random.default_rng(7).standard_normal((BALD_SAMPLES, 1, 3))
    expected = []
    for i in range(4):
        probs = []
        for s in range(BALD_SAMPLES):
            f = mean[i] + np.sqrt(var[i]) * eps[s, 0]
            probs.append(np.exp(f) / np.exp(f).sum())
        probs = np.array(probs)
        mean_p = probs.mean(axis=0)
        entropy_of_mean = -np.sum(mean_p * np.log(mean_p))
        mean_entropy = np.mean([-np.sum(p * np.log(p)) for p in probs])
        expected.append(entropy_of_mean - mean_entropy)
    np.testing.assert_allclose(bald(mean, var, seed=7), expected, rtol=1e-10)


def test_bald_is_zero_without_latent_uncertainty_and_reads_one_column_as_two_logits():
    mean = np.array([[0.3, -1.0], [2.0, 2.0]])
    np.testing.assert_allclose(bald(mean, np.zeros_like(mean)), 0.0, atol=1e-12)
    # one latent f (a binary classifier's): the logits (0, f), f drawn from the one column's draws
    eps = np.random.default_rng(3).standard_normal(BALD_SAMPLES)
    p1 = 1 / (1 + np.exp(-(0.5 + np.sqrt(1.5) * eps)))
    h = lambda p: -(p * np.log(p) + (1 - p) * np.log(1 - p))  # noqa: E731
    np.testing.assert_allclose(bald(np.array([[0.5]]), np.array([[1.5]]), seed=3), [h(p1.mean()) - h(p1).mean()])
    with pytest.raises(ValueError, match="mean and var must both be n x C"):
        bald(mean, np.zeros(2))


@pytest.mark.parametrize("C, chunk", [(3, None), (3, 1), (1, None)])
def test_epig_is_the_loop_over_pairs_classes_and_draws(C, chunk, monkeypatch):
    r"""EPIG against its definition written out a pair at a time: each class's 2 x 2 covariance factored
    by ``numpy.linalg.cholesky``, the joint predictive table :math:`\tfrac1S\sum_s p_s p_s^{*\top}` from the
    same draws, its mutual information, averaged over the targets; also a candidate a chunk, and one latent
    column read as the logits (0, f)."""
    import lvgp.models.acquisition as acquisition

    if chunk is not None:
        monkeypatch.setattr(acquisition, "_EPIG_CHUNK", chunk)
    rng = np.random.default_rng(2)
    n, m = 3, 4
    mean, target_mean = rng.normal(size=(n, C)), rng.normal(size=(m, C))
    var, target_var = rng.uniform(0.2, 2.0, size=(n, C)), rng.uniform(0.2, 2.0, size=(m, C))
    rho = rng.uniform(-0.9, 0.9, size=(C, n, m))
    cov = rho * np.sqrt(var.T[:, :, None] * target_var.T[:, None, :])
    draws = np.random.default_rng(11).standard_normal((2, EPIG_SAMPLES, C))

    def softmax(f):
        f = np.concatenate([[0.0], f]) if C == 1 else f
        return np.exp(f) / np.exp(f).sum()

    expected = np.zeros(n)
    for i in range(n):
        for j in range(m):
            joint = np.zeros((max(C, 2), max(C, 2)))
            for s in range(EPIG_SAMPLES):
                f, f_t = np.empty(C), np.empty(C)
                for c in range(C):
                    L = np.linalg.cholesky(np.array([[var[i, c], cov[c, i, j]], [cov[c, i, j], target_var[j, c]]]))
                    pair = np.array([mean[i, c], target_mean[j, c]]) + L @ draws[:, s, c]
                    f[c], f_t[c] = pair
                joint += np.outer(softmax(f), softmax(f_t)) / EPIG_SAMPLES
            outer = np.outer(joint.sum(1), joint.sum(0))
            expected[i] += np.sum(joint * np.log(joint / outer)) / m
    got = epig(mean, var, target_mean, target_var, cov, seed=11, estimator="monte-carlo")
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-14)
    assert np.all(got >= 0)


@pytest.mark.parametrize("C, chunk", [(3, None), (3, 1), (1, None)])
def test_epig_second_order_is_its_formula_written_out(C, chunk, monkeypatch):
    r"""The second-order estimator against its formula a pair at a time: each text's softmax Jacobian averaged
    over its own draws, :math:`\tfrac12 \sum_{c,d} (\sum_k c_k \tilde G_{ck} \tilde G^*_{dk})^2` with
    :math:`\tilde G_{ck} = \mathbb E[\partial_k p_c] / \sqrt{\bar p_c}`, capped at the smaller entropy of the two
    mean predictives; also a candidate a chunk, and one column read as the logits (0, f)."""
    import lvgp.models.acquisition as acquisition

    if chunk is not None:
        monkeypatch.setattr(acquisition, "_EPIG_CHUNK", chunk)
    rng = np.random.default_rng(5)
    n, m, S = 3, 4, 50
    mean, target_mean = rng.normal(size=(n, C)), rng.normal(size=(m, C))
    var, target_var = rng.uniform(0.2, 2.0, size=(n, C)), rng.uniform(0.2, 2.0, size=(m, C))
    rho = rng.uniform(-0.9, 0.9, size=(C, n, m))
    rho[:, 0, 0] = 0.999  # a pair as strongly coupled as a pair can be
    cov = rho * np.sqrt(var.T[:, :, None] * target_var.T[:, None, :])
    eps = np.random.default_rng(11).standard_normal((S, C))

    def jacobian_and_entropy(mu, v):
        L = max(C, 2)
        G, p_bar = np.zeros((L, C)), np.zeros(L)
        for s in range(S):
            f = mu + np.sqrt(v) * eps[s]
            logits = np.concatenate([[0.0], f]) if C == 1 else f
            p = np.exp(logits) / np.exp(logits).sum()
            p_bar += p / S
            for c in range(L):
                for k in range(C):
                    label = 1 if C == 1 else k
                    G[c, k] += p[c] * ((c == label) - p[label]) / S
        return G / np.sqrt(p_bar)[:, None], -np.sum(p_bar * np.log(p_bar))

    expected = np.zeros(n)
    for i in range(n):
        G, h = jacobian_and_entropy(mean[i], var[i])
        for j in range(m):
            G_t, h_t = jacobian_and_entropy(target_mean[j], target_var[j])
            table = sum(cov[k, i, j] * np.outer(G[:, k], G_t[:, k]) for k in range(C))
            expected[i] += min(0.5 * np.sum(table**2), h, h_t) / m
    got = epig(mean, var, target_mean, target_var, cov, n_samples=S, seed=11, estimator="second-order")
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-15)


def test_epig_second_order_is_the_information_of_weakly_coupled_labels():
    """Against the Monte Carlo tables at 20,000 draws less those of the same draws without the covariances (the
    tables' upward bias taken out): within 8% at correlations up to 0.4. No covariance: 0 exactly, where the
    Monte Carlo tables of 64 draws give every pair the information of their independent draws."""
    rng = np.random.default_rng(2)
    n, m, C = 4, 3, 3
    mean, target_mean = rng.normal(size=(n, C)), rng.normal(size=(m, C))
    var, target_var = rng.uniform(0.5, 2.0, size=(n, C)), rng.uniform(0.5, 2.0, size=(m, C))
    cov = rng.uniform(-0.4, 0.4, size=(C, n, m)) * np.sqrt(var.T[:, :, None] * target_var.T[:, None, :])
    second = epig(mean, var, target_mean, target_var, cov, n_samples=4096, estimator="second-order")
    values = (mean, var, target_mean, target_var)
    tables = epig(*values, cov, n_samples=20_000, estimator="monte-carlo")
    unbiased = tables - epig(*values, 0 * cov, n_samples=20_000, estimator="monte-carlo")
    np.testing.assert_allclose(second, unbiased, rtol=0.08)
    assert np.all(epig(*values, 0 * cov, estimator="second-order") == 0)
    assert np.all(epig(*values, 0 * cov, estimator="monte-carlo") > 1e-3)
    with pytest.raises(ValueError, match="estimator must be 'monte-carlo' or 'second-order'"):
        epig(*values, cov, estimator="exact")


def test_epig_values_what_a_label_says_about_the_targets():
    """Two candidates equally uncertain, one correlated with the targets and one not (an outlier): only the
    first informs their labels; without latent uncertainty nothing does; one column is read as the logits
    (0, f); bad shapes are refused."""
    mean, var = np.zeros((2, 2)), np.full((2, 2), 4.0)
    target_mean, target_var = np.zeros((5, 2)), np.full((5, 2), 4.0)
    cov = np.zeros((2, 2, 5))
    cov[:, 0] = 0.95 * 4.0
    got = epig(mean, var, target_mean, target_var, cov)
    assert got[0] > 0.05 and got[1] < 0.001
    np.testing.assert_allclose(epig(mean, np.zeros((2, 2)), target_mean, np.zeros((5, 2)), 0 * cov), 0.0, atol=1e-12)
    one = epig(mean[:, :1], var[:, :1], target_mean[:, :1], target_var[:, :1], cov[:1])
    assert one.shape == (2,) and one[0] > one[1]
    with pytest.raises(ValueError, match="cov C x n x m"):
        epig(mean, var, target_mean, target_var, cov[:, :, :4])
    with pytest.raises(ValueError, match="n_samples must be at least 1"):
        epig(mean, var, target_mean, target_var, cov, n_samples=0)


def test_acquisitions_are_the_scores_they_are_made_of():
    rng = np.random.default_rng(1)
    words = {"a": "good great fine nice".split(), "b": "bad awful poor dull".split()}
    X = [" ".join(rng.choice(words[c], 3)) for c in "ab" for _ in range(8)]
    y = ["a"] * 8 + ["b"] * 8
    clf = LDKGPClassifier(class_hyperparameters="shared", optimizer=LBFGS(max_iter=20), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
        pool = ["good bad", "great fine", "awful dull nice", "poor"]
        np.testing.assert_array_equal(
            acquisition_scores(clf, "entropy", pool, 0), -probability_novelty(clf.predict_proba(pool), "entropy")
        )
        variance = acquisition_scores(clf, "variance", pool, 0)
        np.testing.assert_allclose(variance, -clf.set_params(novelty_score="variance").score_samples(pool))
        mean, var = clf.predict_latent(pool)
        np.testing.assert_array_equal(acquisition_scores(clf, "bald", pool, 5), bald(mean, var, seed=5))
        targets = ["fine nice", "dull bad"]
        cross = clf.predict_latent_cross(pool, targets)
        np.testing.assert_array_equal(
            acquisition_scores(clf, "epig", pool, 5, targets),
            epig(cross.x_mean, cross.x_var, cross.z_mean, cross.z_var, cross.cov, seed=5),
        )
        with pytest.raises(ValueError, match="epig acquisition needs target texts"):
            acquisition_scores(clf, "epig", pool, 5)
    # one more document's noise a class: gpytorch's transformation noise of a training document of another class
    # (column 0) and of the class's own (column 1), plus the learned additional noise
    noise = clf.observation_noise()
    training = clf.likelihood_.noise.detach().numpy()  # C x n: gpytorch's, the additional noise included
    np.testing.assert_allclose(noise, [[training[0, 8], training[0, 0]], [training[1, 0], training[1, 8]]])
    assert (noise[:, 0] > noise[:, 1]).all()


def test_active_study_end_to_end(toy_topics_tsv, tmp_path):
    from lvgp.experiments.cli import main

    out = tmp_path / "out"
    argv = ["compare", "active", "--dataset", toy_topics_tsv, "--budget", "17", "--batch", "5", "--splits", "2"]
    argv += ["--test-size", "15", "--ldk-max-iter", "5", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    records = json.loads((out / "results.json").read_text())
    strategies = [
        "gp-entropy",
        "gp-bald",
        "gp-variance",
        "logreg-entropy",
        "random",
        "random-gp",
        "gp-pool-greedy-epig",
    ]
    assert sorted({r["strategy"] for r in records}) == sorted(strategies) and len(records) == 14
    for r in records:
        # one text a class to start, batches of 5, the last batch cut to the budget
        assert [p["labels"] for p in r["curve"]] == [3, 8, 13, 17]
        assert r["n_pool"] == 45 and r["n_test"] == 15
        assert r["aulc"] == pytest.approx(np.mean([p["accuracy"] for p in r["curve"]]))
        assert r["final_accuracy"] == r["curve"][-1]["accuracy"]
    for r in (r for r in records if r["strategy"] == "random"):  # random reaches its own final accuracy
        assert r["labels_to_random_final"] <= 17
    # every strategy starts from the same texts: the first point's GP (or logistic regression) agree
    firsts = {(r["strategy"], r["split"]): r["curve"][0]["accuracy"] for r in records}
    for split in (0, 1):
        assert firsts["gp-entropy", split] == firsts["random-gp", split] == firsts["gp-bald", split]
        assert firsts["logreg-entropy", split] == firsts["random", split]
    table = (out / "table.md").read_text()
    assert "GP, BALD" in table and "labels to random's accuracy at 17" in table
    assert (out / "learning_curves.png").stat().st_size > 10_000
    assert main(["compare", "active", "--report-only", "--out", str(out), "--quiet"]) == 0


def test_active_table_leaves_a_dash_where_the_curves_start_above_half_the_budget():
    """52 classes start at 52 labels: a budget of 102 has no point at its half (51), and the table says "–"
    there, not a mean of nothing."""
    from lvgp.experiments.active import ActiveStudy, table_markdown

    study = ActiveStudy(dataset="r52", budget=102, batch=10, splits=1, strategies=("random",))
    curve = [{"labels": n, "accuracy": 0.5 + n / 1000, "log_loss": 1.0} for n in (52, 62, 72, 82, 92, 102)]
    record = {"method": "random", "split": 0, "curve": curve, "aulc": 0.58, "final_accuracy": 0.602}
    record |= {"final_log_loss": 1.0, "labels_to_random_final": 102, "fit_seconds": 1.0, "acquire_seconds": 0.0}
    row = table_markdown([record], study).splitlines()[2]
    assert row.split(" | ")[2] == "–" and "nan" not in row and "0.602 ± 0.000" in row


def test_active_table_says_when_no_random_texts_ran():
    """A study without ``random`` has no accuracy to reach: its table says so, not "0 of n reach it"; with
    ``random`` the labels are read as before."""
    from lvgp.experiments.active import ActiveStudy, table_markdown

    curve = [{"labels": n, "accuracy": 0.5 + n / 100, "log_loss": 1.0} for n in (2, 6, 10)]
    record = {"method": "logreg-entropy", "split": 0, "curve": curve, "aulc": 0.56, "final_accuracy": 0.6}
    record |= {"final_log_loss": 1.0, "labels_to_random_final": None, "fit_seconds": 1.0, "acquire_seconds": 0.0}
    alone = ActiveStudy(dataset="r8", budget=10, batch=4, splits=1, strategies=("logreg-entropy",))
    row = table_markdown([record], alone).splitlines()[2]
    assert row.split(" | ")[5] == "– (no random texts in this study)" and "reach it" not in row
    both = ActiveStudy(dataset="r8", budget=10, batch=4, splits=1, strategies=("logreg-entropy", "random"))
    random_texts = record | {"method": "random", "labels_to_random_final": 10}
    rows = table_markdown([record | {"labels_to_random_final": 6}, random_texts], both).splitlines()[2:4]
    assert [r.split(" | ")[5] for r in rows] == ["6", "10"]


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--batch", "20", "--budget", "20"], "--batch 20 must be below --budget 20"),
        (["--budget", "3", "--batch", "1"], "the start takes one text of each of the 3 classes"),
        (["--strategies", "gp-magic"], "unknown method 'gp-magic'"),
    ],
)
def test_active_study_refuses_bad_options(toy_topics_tsv, tmp_path, extra, match, capsys):
    from lvgp.experiments.cli import main

    argv = ["compare", "active", "--dataset", toy_topics_tsv, "--out", str(tmp_path / "o"), "--quiet", *extra]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and match in capsys.readouterr().err
    assert not (tmp_path / "o" / "cells").exists()


def test_power_batch_draws_without_replacement_in_proportion_to_the_scores():
    """Kirsch et al. 2023's power acquisition by the Gumbel-top-k trick: the first text drawn with
    probability s_i^beta / sum_j s_j^beta (20,000 draws), k distinct texts, a zero score only after
    every positive one, and bad scores refused."""
    from lvgp._random import numpy_generator
    from lvgp.experiments.active import power_batch

    rng = numpy_generator(0)
    scores = np.array([1.0, 2.0, 3.0, 4.0, 0.0])
    firsts = np.bincount([power_batch(scores, 1, rng)[0] for _ in range(20_000)], minlength=5) / 20_000
    np.testing.assert_allclose(firsts, [0.1, 0.2, 0.3, 0.4, 0.0], atol=0.01)
    squared = np.bincount([power_batch(scores, 1, rng, beta=2.0)[0] for _ in range(20_000)], minlength=5) / 20_000
    np.testing.assert_allclose(squared, np.array([1, 4, 9, 16, 0]) / 30, atol=0.01)
    batch = power_batch(scores, 5, rng)
    assert sorted(batch.tolist()) == [0, 1, 2, 3, 4] and batch[-1] == 4
    with pytest.raises(ValueError, match="at least 0"):
        power_batch(np.array([1.0, -0.1]), 1, rng)
    with pytest.raises(ValueError, match="k must be in"):
        power_batch(scores, 6, rng)


class _JointGaussianClassifier:
    """A stand-in for the fitted Dirichlet classifier: the latents of named texts jointly Gaussian, class by class
    (means ``N x C``, covariances ``C x N x N``), the probabilities and observation noises given."""

    def __init__(self, names, mean, cov, proba, noise):
        self.index = {t: i for i, t in enumerate(names)}
        self.mean, self.cov, self.proba, self.noise = mean, cov, proba, noise

    def predict_latent_cross(self, X, Z):
        from lvgp.models.gpc import LatentCross

        x, z = [self.index[t] for t in X], [self.index[t] for t in Z]
        var = np.diagonal(self.cov, axis1=1, axis2=2).T
        return LatentCross(self.mean[x], var[x], self.mean[z], var[z], self.cov[:, x][:, :, z])

    def predict_proba(self, X):
        return self.proba[[self.index[t] for t in X]]

    def observation_noise(self):
        return self.noise


def _joint_gaussian(n, m, C, seed):
    rng = np.random.default_rng(seed)
    names = [f"t{i}" for i in range(n)] + [f"z{j}" for j in range(m)]
    root = rng.standard_normal((C, n + m, 4)) * 0.8
    cov = root @ root.transpose(0, 2, 1) + 0.05 * np.eye(n + m)
    mean = rng.standard_normal((n + m, C))
    proba = rng.dirichlet(np.ones(C), size=n + m)
    return names, mean, cov, proba


def _epig_of(model, texts, targets, seed=3):
    cross = model.predict_latent_cross(texts, targets)
    return epig(cross.x_mean, cross.x_var, cross.z_mean, cross.z_var, cross.cov, seed=seed)


def test_conditioned_power_batch_is_the_power_batch_where_a_label_adds_no_precision():
    """With an infinite observation noise no choice moves another text's EPIG: the same texts in the same order as
    :func:`power_batch` from the same draws (a shortlist of the highest keys that cuts nothing off)."""
    from lvgp.experiments.active import conditioned_power_batch, power_batch

    names, mean, cov, proba = _joint_gaussian(40, 12, 3, seed=1)
    model = _JointGaussianClassifier(names, mean, cov, proba, np.full((3, 2), np.inf))
    texts, targets = names[:40], names[40:]
    scores = _epig_of(model, texts, targets)
    for beta, shortlist in ((1.0, 10), (3.0, 2)):
        picked = conditioned_power_batch(
            model, texts, targets, scores, 8, np.random.default_rng(5), beta, seed=3, shortlist=shortlist
        )
        assert picked.tolist() == power_batch(scores, 8, np.random.default_rng(5), beta).tolist()
    with pytest.raises(ValueError, match="scores must be 40"):
        conditioned_power_batch(model, texts, targets, scores[:-1], 8, np.random.default_rng(5))


def test_conditioning_on_a_text_is_the_gaussian_posterior_given_its_noisy_latent():
    """:func:`condition_on_text` with the precision 1/(v_s + noise) is the joint Gaussian's posterior given one
    noisy observation of text s's latent, class by class: the dense formula on the whole covariance."""
    from lvgp.experiments.active import condition_on_text

    n, m, C, s = 6, 5, 3, 2
    names, mean, cov, proba = _joint_gaussian(n, m, C, seed=2)
    noise = np.array([0.3, 1.0, 2.5])
    posterior = cov - cov[:, :, s, None] * cov[:, None, s, :] / (cov[:, s, s] + noise)[:, None, None]
    among, to_targets = cov[:, :n, :n].copy(), cov[:, :n, n:].copy()
    var = np.diagonal(cov, axis1=1, axis2=2).T
    var_out, target_var_out = condition_on_text(among, to_targets, var[:n], var[n:], s, 1.0 / (cov[:, s, s] + noise))
    np.testing.assert_allclose(among, posterior[:, :n, :n], atol=1e-12)
    np.testing.assert_allclose(to_targets, posterior[:, :n, n:], atol=1e-12)
    np.testing.assert_allclose(var_out, np.diagonal(posterior, axis1=1, axis2=2).T[:n], atol=1e-12)
    np.testing.assert_allclose(target_var_out, np.diagonal(posterior, axis1=1, axis2=2).T[n:], atol=1e-12)


def test_conditioned_power_batch_passes_over_a_copy_of_a_chosen_text():
    """Two copies of the text of the highest EPIG (their latents one variable) and a text about other targets:
    the power batch of a large beta takes both copies; the conditioned batch takes one copy, then the other
    text, whose information the first copy's label did not use up."""
    from lvgp.experiments.active import conditioned_power_batch, power_batch

    # latents of one class (C = 2, the second class's latents the first's negatives): texts a, a' (copies), b;
    # targets za (follow a) and zb (follow b)
    names = ["a", "a2", "b", "za", "zb"]
    base = np.array([[1.0, 1.0, 0, 0.9, 0], [1.0, 1.0, 0, 0.9, 0], [0, 0, 0.8, 0, 0.7], [0.9, 0.9, 0, 1.0, 0],
                     [0, 0, 0.7, 0, 1.0]])  # fmt: skip
    base[[3, 4], [3, 4]] += 0.05
    cov = np.stack([base, base])
    mean = np.zeros((5, 2))
    proba = np.full((5, 2), 0.5)
    model = _JointGaussianClassifier(names, mean, cov, proba, np.full((2, 2), 0.01))
    texts, targets = names[:3], names[3:]
    scores = _epig_of(model, texts, targets)
    assert scores[0] == scores[1] > scores[2] > 0
    rng = np.random.default_rng(0)
    assert sorted(power_batch(scores, 2, rng, beta=200.0).tolist()) == [0, 1]
    picked = conditioned_power_batch(model, texts, targets, scores, 2, np.random.default_rng(0), 200.0, seed=3)
    assert picked[0] in (0, 1) and picked[1] == 2


def test_choose_texts_to_label_conditions_its_batch_on_its_own_texts():
    """The user's function on the two copies of the top text: one copy, then the text about other targets (where
    the plain power draw at the same exponent takes both copies). It is ``lvgp``'s, and the study's module still
    imports it (with the other acquisitions, their home before ``lvgp.models.acquisition``)."""
    import lvgp
    import lvgp.experiments.active as active
    from lvgp.models.acquisition import choose_texts_to_label, power_batch

    assert lvgp.choose_texts_to_label is active.choose_texts_to_label is choose_texts_to_label

    names = ["a", "a2", "b", "za", "zb"]
    base = np.array([[1.0, 1.0, 0, 0.9, 0], [1.0, 1.0, 0, 0.9, 0], [0, 0, 0.8, 0, 0.7], [0.9, 0.9, 0, 1.0, 0],
                     [0, 0, 0.7, 0, 1.0]])  # fmt: skip
    base[[3, 4], [3, 4]] += 0.05
    model = _JointGaussianClassifier(names, np.zeros((5, 2)), np.stack([base, base]), np.full((5, 2), 0.5),
                                     np.full((2, 2), 0.01))  # fmt: skip
    texts, targets = names[:3], names[3:]
    picked = choose_texts_to_label(model, texts, 2, targets=targets, beta=200.0, random_state=0, seed=3)
    assert picked[0] in (0, 1) and picked[1] == 2
    assert sorted(power_batch(_epig_of(model, texts, targets), 2, np.random.default_rng(0), beta=200.0)) == [0, 1]


def test_choose_texts_to_label_draws_its_targets_from_the_texts_then_the_batch():
    """Without ``targets``: ``n_targets`` of the texts drawn from ``random_state`` (a generator is used as given),
    then :func:`conditioned_power_batch` from the same generator at :data:`GREEDY_BETA`; ``k`` distinct positions,
    the same for the same seed; bad arguments refused by name."""
    from lvgp.models.acquisition import GREEDY_BETA, choose_texts_to_label, conditioned_power_batch

    names, mean, cov, proba = _joint_gaussian(30, 0, 3, seed=4)
    model = _JointGaussianClassifier(names, mean, cov, proba, np.full((3, 2), 0.2))
    picked = choose_texts_to_label(model, names, 6, n_targets=12, random_state=np.random.default_rng(9))
    rng = np.random.default_rng(9)
    targets = [names[i] for i in rng.choice(30, 12, replace=False)]
    scores = np.clip(_epig_of(model, names, targets, seed=0), 0.0, None)
    expected = conditioned_power_batch(model, names, targets, scores, 6, rng, GREEDY_BETA, 0)
    assert picked.tolist() == expected.tolist()
    assert len(set(picked.tolist())) == 6 and all(0 <= i < 30 for i in picked)
    again = choose_texts_to_label(model, names, 6, n_targets=12, random_state=9)
    assert again.tolist() == choose_texts_to_label(model, names, 6, n_targets=12, random_state=9).tolist()
    assert len(choose_texts_to_label(model, names, 30, random_state=1)) == 30  # every text: 30 targets at most
    for bad, error, match in (({"k": 31}, ValueError, "k must be <= 30"), ({"k": -1}, ValueError, "k must be >= 0"),
                              ({"n_targets": 0}, ValueError, "n_targets must be >= 1"),
                              ({"k": True}, TypeError, "k must be an integer"),
                              ({"n_targets": 2.0}, TypeError, "n_targets must be an integer")):  # fmt: skip
        with pytest.raises(error, match=match):
            choose_texts_to_label(model, names, **{"k": 3, **bad})
    assert len(choose_texts_to_label(model, names, np.int64(2), random_state=1)) == 2  # numpy integers taken
    with pytest.raises(TypeError, match="texts must be a non-empty list of strings"):
        choose_texts_to_label(model, [], 1)
    with pytest.raises(TypeError, match="targets must be a non-empty list of strings"):
        choose_texts_to_label(model, names, 3, targets=[])
    # the library's check of texts (lvgp.encoders.sentence.check_texts): a bad row named, a lone string refused
    with pytest.raises(TypeError, match=r"texts must hold strings; rows \[1\]"):
        choose_texts_to_label(model, [names[0], 7], 1)
    with pytest.raises(TypeError, match="targets must be a sequence of texts, not a single string"):
        choose_texts_to_label(model, names, 3, targets="a plate of sushi")
    laplace = LDKGPClassifier(inference="laplace", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        laplace.fit(["good great", "great fine", "bad dull", "awful bad"], ["p", "p", "n", "n"])
    with pytest.raises(
        ValueError, match="model must be an LDKGPClassifier fitted with inference='dirichlet'.*'laplace'"
    ):
        choose_texts_to_label(laplace, ["good film", "bad plot"], 1)


def test_power_strategies_run_in_the_study(toy_topics_tsv, tmp_path):
    """The power strategies (the pool's EPIG alone among them in the default set), named, run and start
    from the same texts as the GP's top-k entropy."""
    from lvgp.experiments.cli import main

    out = tmp_path / "out"
    argv = ["compare", "active", "--dataset", toy_topics_tsv, "--budget", "13", "--batch", "5", "--splits", "1"]
    argv += ["--test-size", "15", "--ldk-max-iter", "5", "--out", str(out), "--quiet"]
    argv += ["--strategies", "gp-entropy,gp-power-entropy,gp-power-bald,gp-power-epig,gp-pool-power-epig"]
    argv[-1] += ",gp-pool-greedy-epig"
    assert main(argv) == 0
    records = {r["strategy"]: r for r in json.loads((out / "results.json").read_text())}
    assert set(records) == {
        "gp-entropy", "gp-power-entropy", "gp-power-bald", "gp-power-epig", "gp-pool-power-epig", "gp-pool-greedy-epig"
    }  # fmt: skip
    for strategy in ("gp-power-bald", "gp-power-epig", "gp-pool-power-epig", "gp-pool-greedy-epig"):
        assert [p["labels"] for p in records[strategy]["curve"]] == [3, 8, 13]
    assert records["gp-power-entropy"]["curve"][0] == records["gp-entropy"]["curve"][0]
    assert records["gp-power-epig"]["curve"][0] == records["gp-entropy"]["curve"][0]
    assert records["gp-pool-greedy-epig"]["curve"][0] == records["gp-pool-power-epig"]["curve"][0]


def test_the_pool_gp_reads_the_pool_through_a_cluster_kernel(toy_topics_tsv, tmp_path):
    """The pool strategies (not in the default set) run; their GP's kernel is the plain GP's plus the
    pool's cluster kernel on the encoder's vectors (one part more, its weight learned), built once a
    seed from every pool text."""
    from lvgp.experiments.active import ActiveStudy, _gp_pool, pool_kernel
    from lvgp.experiments.cli import main
    from lvgp.kernels import ClusterKernel

    out = tmp_path / "out"
    argv = ["compare", "active", "--dataset", toy_topics_tsv, "--budget", "13", "--batch", "5", "--splits", "1"]
    argv += ["--test-size", "15", "--ldk-max-iter", "5", "--out", str(out), "--quiet"]
    argv += ["--strategies", "random-gp-pool,gp-pool-power-entropy"]
    assert main(argv) == 0
    records = {r["strategy"]: r for r in json.loads((out / "results.json").read_text())}
    assert [p["labels"] for p in records["gp-pool-power-entropy"]["curve"]] == [3, 8, 13]
    # the same first texts; the pool GP's own prediction from them
    assert records["random-gp-pool"]["curve"][0] == records["gp-pool-power-entropy"]["curve"][0]
    study = ActiveStudy(dataset=toy_topics_tsv, budget=13, batch=5, splits=1, test_size=15, ldk_max_iter=5)
    part = pool_kernel(study, 0)
    assert isinstance(part, ClusterKernel) and part.cloud.shape[0] == len(study.split(0).pool_texts)
    assert part.n_components == 6  # two a class
    model = _gp_pool(study, {"method": "gp-pool-entropy", "split": 0, "params": {}}, None)
    texts, labels = study.split(0).pool_texts[:9], study.split(0).pool_labels[:9]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(texts, labels)
    kernels = [m for m in model.model_.covar_module.modules() if isinstance(m, ClusterKernel)]
    assert kernels and torch.equal(kernels[0].cloud, part.cloud)


def test_vocabulary_from_the_pool_fits_both_learners_word_parts_on_every_pool_text(toy_topics_tsv, tmp_path):
    """``--vocabulary-from pool``: the GP's vocabulary is the whole pool's and its tf-idf weights the pool's
    idf (scikit-learn's smoothed idf of the pool's texts), whatever the labelled texts; logistic regression's
    vectorizer is fitted on the labelled texts and the unlabelled rest, i.e. on the pool (its vocabulary and
    idf those of a vectorizer fitted on the pool's texts alone); the study runs and says so in its table."""
    from lvgp.baselines.encoder import EncoderLogisticRegression, default_tfidf
    from lvgp.bow.weighting import idf_weights
    from lvgp.experiments.active import ActiveStudy, _gp, pool_vocabulary, run_cell
    from lvgp.experiments.cli import main
    from lvgp.kernels import BagOfWordsKernel

    options = dict(dataset=toy_topics_tsv, budget=13, batch=5, splits=1, test_size=15, ldk_max_iter=5)
    study = ActiveStudy(**options, vocabulary_from="pool")
    split = study.split(0)
    vocabulary, idf = pool_vocabulary(study, 0)
    ids = vocabulary.encode(split.pool_texts)
    words = {w for t in split.pool_texts for w in t.split() if not w.isdigit()}  # the tokenizer drops numbers
    assert set(vocabulary.words) == words - {"note"} or set(vocabulary.words) == words
    np.testing.assert_array_equal(idf, idf_weights(ids, len(vocabulary)))
    cell = {"method": "gp-entropy", "split": 0, "params": {}}
    labelled = split.start  # one text a class: "note i" words of 3 texts, of the 45 the pool holds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pooled = _gp(study, cell, None).fit([split.pool_texts[i] for i in labelled], split.pool_labels[labelled])
        alone = _gp(ActiveStudy(**options), cell, None)
        alone.fit([split.pool_texts[i] for i in labelled], split.pool_labels[labelled])
    assert pooled.encoder_.vocabulary is vocabulary and len(alone.encoder_.vocabulary) < len(vocabulary)
    (bow,) = [m for m in pooled.model_.covar_module.modules() if isinstance(m, BagOfWordsKernel)]
    weights = bow.word_weights.numpy()  # the pool's idf, up to the kernel's scale (the cosine does not see it)
    np.testing.assert_allclose(weights / weights[0], idf / idf[0], rtol=1e-13)

    # logistic regression: fit(X, y, unlabeled) fits the tf-idf on both; the study passes the pool's rest
    rest = [t for i, t in enumerate(split.pool_texts) if i not in set(labelled)]
    model = EncoderLogisticRegression(tfidf=True, Cs=(1.0,)).fit(
        [split.pool_texts[i] for i in labelled], split.pool_labels[labelled], unlabeled=rest
    )
    reference = default_tfidf().fit(split.pool_texts)
    assert model.tfidf_.vocabulary_ == reference.vocabulary_ and model.n_unlabeled_ == len(rest)
    np.testing.assert_allclose(model.tfidf_.idf_, reference.idf_, rtol=1e-15)
    with pytest.warns(UserWarning, match="3 unlabeled texts are not used"):
        EncoderLogisticRegression(Cs=(1.0,)).fit(split.pool_texts[:6], split.pool_labels[:6], unlabeled=rest[:3])
    record = run_cell(study, {"method": "logreg-entropy", "split": 0, "params": {}})
    labelled_record = run_cell(ActiveStudy(**options), {"method": "logreg-entropy", "split": 0, "params": {}})
    assert [p["labels"] for p in record["curve"]] == [3, 8, 13]
    assert record["curve"][0]["log_loss"] != labelled_record["curve"][0]["log_loss"]  # other features

    out = tmp_path / "out"
    argv = ["compare", "active", "--dataset", toy_topics_tsv, "--budget", "13", "--batch", "5", "--splits", "1"]
    argv += ["--test-size", "15", "--ldk-max-iter", "5", "--out", str(out), "--quiet", "--vocabulary-from", "pool"]
    argv += ["--strategies", "gp-power-entropy,random"]
    assert main(argv) == 0
    assert "Word parts fitted on the whole pool's texts (--vocabulary-from pool)" in (out / "table.md").read_text()


def test_the_encoder_part_option_puts_an_rbf_in_the_gps_kernels_in_place_of_the_cosine(toy_topics_tsv, tmp_path):
    """``--encoder-part rbf``: the GP learners' part on the encoder's vectors is an RBF kernel (the pool GP's
    cluster part kept beside it), the cosine's linear kernel gone; the default keeps the cosine; the study runs and
    its table names the setting."""
    from gpytorch.kernels import LinearKernel, RBFKernel

    from lvgp.experiments.active import ENCODER_PART, ActiveStudy, _gp, _gp_pool
    from lvgp.kernels.point_cloud import ClusterKernel

    options = dict(dataset=toy_topics_tsv, budget=13, batch=5, splits=1, test_size=15, ldk_max_iter=5)
    split = ActiveStudy(**options).split(0)
    texts, labels = split.pool_texts[:9], split.pool_labels[:9]
    assert ENCODER_PART == "cosine" and ActiveStudy(**options).encoder_part == "cosine"

    def kinds(study, learner):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = learner(study, {"method": "gp-pool-entropy", "split": 0, "params": {}}, None).fit(texts, labels)
        found = {type(m) for m in model.model_.covar_module.modules()}
        return RBFKernel in found, LinearKernel in found, ClusterKernel in found

    rbf = ActiveStudy(**options, encoder_part="rbf")
    assert kinds(ActiveStudy(**options), _gp) == (False, True, False)
    assert kinds(rbf, _gp) == (True, False, False)
    assert kinds(ActiveStudy(**options), _gp_pool) == (False, True, True)
    assert kinds(rbf, _gp_pool) == (True, False, True)

    table, old = _run_with_the_option(toy_topics_tsv, tmp_path, "--encoder-part", "rbf")
    assert "The GP's encoder part rbf (--encoder-part; default cosine)" in table
    assert old.encoder_part == "cosine"  # a study written before the option: the cosine, whatever the default


def test_the_encoder_weight_option_lets_the_labels_weigh_the_gps_encoder_parts(toy_topics_tsv, tmp_path, monkeypatch):
    """``--encoder-weight loo``: the GP learners fit with ``LDKGPClassifier(encoder_weight="loo")``, which chooses a
    factor of the encoder parts' weights (the pool GP's cluster part among them) by the labels' leave-one-out
    predictions (on long texts: the toy's are short, so the threshold is lowered here); the default keeps the
    evidence's; the study runs and its table names the setting; an older ``study.json`` reads as the evidence's."""
    from lvgp.experiments.active import ENCODER_WEIGHT, ActiveStudy, _gp, _gp_pool
    from lvgp.models.gpc import estimator

    monkeypatch.setattr(estimator, "LONG_TEXT_WORDS", 1)
    options = dict(dataset=toy_topics_tsv, budget=13, batch=5, splits=1, test_size=15, ldk_max_iter=5)
    split = ActiveStudy(**options).split(0)
    texts, labels = split.pool_texts[:12], split.pool_labels[:12]
    assert ENCODER_WEIGHT == "evidence" and ActiveStudy(**options).encoder_weight == "evidence"
    loo = ActiveStudy(**options, encoder_weight="loo")
    for learner in (_gp, _gp_pool):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cell = {"method": "gp-pool-entropy", "split": 0, "params": {}}
            chosen = learner(loo, cell, None).fit(texts, labels)
            plain = learner(ActiveStudy(**options), cell, None).fit(texts, labels)
        assert chosen.encoder_weight == "loo" and plain.encoder_weight == "evidence"
        factors = [row["factor"] for row in chosen.encoder_weight_scores_]
        assert factors == [0.125, 0.25, 0.5, 1.0] and chosen.encoder_weight_factor_ in factors
        assert plain.encoder_weight_factor_ is None and plain.encoder_weight_scores_ is None  # no choice made

    table, old = _run_with_the_option(toy_topics_tsv, tmp_path, "--encoder-weight", "loo")
    assert "The GP's encoder weight loo (--encoder-weight; default evidence)" in table
    assert old.encoder_weight == "evidence"


def test_the_pool_words_option_adds_a_cluster_part_of_the_texts_joined_to_their_words(toy_topics_tsv, tmp_path):
    """``--pool-words lsa``: the pool GP's kernel gets a second cluster part beside the encoder's, whose cloud is the
    pool's texts' encoder vectors joined to their words (the pool's tf-idf reduced by a truncated SVD), with its own
    weight (the default); it reads the pool's and the test documents' vectors (any other input is refused, its rows
    named); the plain GP is unchanged, and ``none`` is the encoder's part alone; the study runs and its table names the
    setting; an older ``study.json`` reads as ``none``."""
    from lvgp.experiments.active import POOL_WORDS, ActiveStudy, _gp, _gp_pool, pool_words_kernel
    from lvgp.experiments.joined_cloud import JoinedCloudClusterKernel
    from lvgp.kernels.point_cloud import ClusterKernel

    options = dict(dataset=toy_topics_tsv, budget=13, batch=5, splits=1, test_size=15, ldk_max_iter=5)
    study, words = ActiveStudy(**options, pool_words="none"), ActiveStudy(**options)
    split = study.split(0)
    texts, labels = split.pool_texts[:9], split.pool_labels[:9]
    assert POOL_WORDS == "lsa" and words.pool_words == "lsa"

    def parts(study, learner):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = learner(study, {"method": "gp-pool-entropy", "split": 0, "params": {}}, None).fit(texts, labels)
            model.predict_proba(split.test_texts[:4])
        return sorted(type(m).__name__ for m in model.model_.covar_module.modules() if isinstance(m, ClusterKernel))

    assert parts(study, _gp_pool) == ["ClusterKernel"] and parts(words, _gp) == []
    assert parts(words, _gp_pool) == ["ClusterKernel", "JoinedCloudClusterKernel"]
    kernel = pool_words_kernel(words, 0)
    assert isinstance(kernel, JoinedCloudClusterKernel)
    assert kernel.cloud.shape[0] == len(split.pool_texts)
    assert kernel.inputs.shape[0] == len(split.pool_texts) + len(split.test_texts)
    stranger = torch.nn.functional.normalize(torch.ones(2, kernel.inputs.shape[1], dtype=torch.float64), dim=-1)
    with pytest.raises(ValueError, match=r"rows \[0, 1\] of the inputs \(2 of 3\)"):
        kernel(torch.cat([stranger, kernel.inputs[:1]])).to_dense()

    table, old = _run_with_the_option(toy_topics_tsv, tmp_path, "--pool-words", "none")
    assert "joined to their words: none (--pool-words; default lsa)" in table
    assert old.pool_words == "none"  # a study written before the option: the encoder's part alone


def test_the_words_cluster_kernel_of_texts_joins_each_texts_unit_vector_to_its_words_coordinates(monkeypatch):
    """``words_cluster_kernel_of_texts`` (the active study's ``--pool-words lsa`` part and the notebook's): its cloud
    is the cloud texts' joined vectors; each joined vector is the text's encoder unit vector and its words' unit
    coordinates (the cloud's sublinear tf-idf by a truncated SVD, fitted on the cloud alone), each half of the squared
    norm -- checked against the pieces made by hand; it reads the other texts' vectors, refuses a stranger's, and a
    cloud of one text is a ValueError."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from lvgp.encoders import SentenceEncoder
    from lvgp.experiments.joined_cloud import WORDS_SHARE, JoinedCloudClusterKernel, words_cluster_kernel_of_texts

    words = ["film", "fine", "dull", "plot", "actor", "score", "scene", "music"]
    encoder = SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, words=words, seed=3)
    rng = np.random.default_rng(0)
    cloud = [" ".join(rng.choice(words, 5)) for _ in range(12)]
    others = ["film score music", "dull plot scene"]
    kernel = words_cluster_kernel_of_texts(encoder, "cpu", cloud, others, n_classes=2)
    assert isinstance(kernel, JoinedCloudClusterKernel)
    assert kernel.cloud.shape[0] == len(cloud) and kernel.inputs.shape[0] == len(cloud) + len(others)
    assert kernel.n_components == 4 and kernel.n_neighbors == min(10, len(cloud) - 1)
    vectors = np.asarray(encoder.encode(cloud + others), dtype=np.float64)
    units = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    np.testing.assert_allclose(kernel.inputs.numpy(), units, atol=1e-12)
    d = units.shape[1]
    joined = kernel.joined_inputs.numpy()
    np.testing.assert_allclose(joined[:, :d], np.sqrt(1 - WORDS_SHARE) * units, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(joined[:, d:], axis=1), np.sqrt(WORDS_SHARE), atol=1e-12)
    np.testing.assert_array_equal(kernel.cloud.numpy(), joined[: len(cloud)])
    # the words' coordinates span the cloud's tf-idf rows: a 12-text cloud keeps words of one text (min_df=1)
    tfidf = TfidfVectorizer(sublinear_tf=True).fit(cloud).transform(cloud + others).toarray()
    assert joined.shape[1] - d == min(300, tfidf.shape[1] - 1, len(cloud) - 1)
    inner_words = joined[:, d:] @ joined[:, d:].T / WORDS_SHARE  # cosines of the reduced tf-idf rows
    pairs = np.triu_indices(len(joined), 1)
    assert np.corrcoef(inner_words[pairs], (tfidf @ tfidf.T)[pairs])[0, 1] > 0.9
    kernel(kernel.inputs[-2:], kernel.inputs[:3]).to_dense()  # the other texts are read
    # a composed GP's encoder columns are the known vectors to the bit: found by their digests, never searched for
    from gpytorch.kernels import LinearKernel

    from lvgp.experiments import joined_cloud
    from lvgp.kernels.packed import FeatureKernel, pack_documents

    columns = FeatureKernel(LinearKernel(), d, normalize=True).features(
        pack_documents(torch.zeros(len(others), 3, dtype=torch.long), torch.as_tensor(encoder.encode(others)))
    )
    fresh = words_cluster_kernel_of_texts(encoder, "cpu", cloud, others, n_classes=2)
    with monkeypatch.context() as patch:
        patch.setattr(joined_cloud, "nearest_cloud_points", None)  # a search would fail
        assert fresh.known_rows(columns).tolist() == [len(cloud), len(cloud) + 1]
    with pytest.raises(ValueError, match="not the encoder vectors of a text"):
        kernel(torch.nn.functional.normalize(torch.ones(1, d, dtype=torch.float64), dim=-1)).to_dense()
    with pytest.raises(ValueError, match="cloud_texts must hold 2 texts or more"):
        words_cluster_kernel_of_texts(encoder, "cpu", cloud[:1], others, n_classes=2)
    with pytest.raises(TypeError, match="other_texts"):  # word ids are not texts: the argument named
        words_cluster_kernel_of_texts(encoder, "cpu", cloud, [3, "a film"], n_classes=2)


def test_the_words_cluster_kernel_reads_texts_named_after_it_was_made():
    """``read_texts``: a text made known after the words' part was made gets the joined vector it would have had if
    named then (the same tf-idf and SVD), its kernel values with it; the cloud does not move; reading the texts again
    does not grow the kernel; a saved kernel that knows more texts loads into one made without them; a kernel made
    from vectors takes new texts' vectors (``add_inputs``) and refuses texts."""
    from lvgp.encoders import SentenceEncoder
    from lvgp.experiments.joined_cloud import JoinedCloudClusterKernel, words_cluster_kernel_of_texts

    words = ["film", "fine", "dull", "plot", "actor", "score", "scene", "music"]
    encoder = SentenceEncoder.from_config({"hidden_size": 8, "intermediate_size": 16}, words=words, seed=3)
    rng = np.random.default_rng(1)
    cloud = [" ".join(rng.choice(words, 5)) for _ in range(12)]
    others = ["film score music", "dull plot scene", "a fine actor"]
    named = words_cluster_kernel_of_texts(encoder, "cpu", cloud, others, n_classes=2)
    later = words_cluster_kernel_of_texts(encoder, "cpu", cloud, [], n_classes=2)
    assert torch.equal(later.cloud, named.cloud) and torch.equal(later.projection, named.projection)
    queries = named.inputs[-3:]
    with pytest.raises(ValueError, match=r"rows \[0, 1, 2\] .*make their texts known first \(read_texts"):
        later(queries).to_dense()
    before = later(later.inputs[:4]).to_dense()  # neighbours found for four cloud texts, then more texts known
    assert later.read_texts(others) is later and len(later.inputs) == len(cloud) + 3
    torch.testing.assert_close(later.joined_inputs, named.joined_inputs)
    torch.testing.assert_close(later(queries, later.inputs[:4]).to_dense(), named(queries, named.inputs[:4]).to_dense())
    torch.testing.assert_close(later(later.inputs[:4]).to_dense(), before, rtol=0, atol=0)
    later.read_texts(others[::-1]).read_texts([])
    assert len(later.inputs) == len(cloud) + 3  # known already: not added again; no text, nothing to read
    fresh = words_cluster_kernel_of_texts(encoder, "cpu", cloud, [], n_classes=2)
    fresh.load_state_dict(later.state_dict())  # a saved kernel knows more texts
    torch.testing.assert_close(fresh(queries).to_dense(), later(queries).to_dense(), rtol=0, atol=0)
    options = dict(n_components=named.n_components, n_neighbors=named.n_neighbors, power=named.power)
    plain = JoinedCloudClusterKernel(
        named.cloud, inputs=named.inputs[:12], joined_inputs=named.joined_inputs[:12], **options
    )
    with pytest.raises(TypeError, match="no texts_reader: give the new texts' vectors to add_inputs"):
        plain.read_texts(others)
    with pytest.raises(ValueError, match=r"the known vectors' width"):
        plain.add_inputs(named.inputs[-3:, :4], named.joined_inputs[-3:])
    nan = named.joined_inputs[-3:].clone()
    nan[1, 0] = float("nan")
    with pytest.raises(ValueError, match=r"joined_inputs has non-finite values in rows \[1\] \(1 rows\)"):
        plain.add_inputs(named.inputs[-3:], nan)
    plain.add_inputs(named.inputs[-3:], named.joined_inputs[-3:])
    torch.testing.assert_close(plain(queries).to_dense(), named(queries).to_dense(), rtol=0, atol=0)


def _run_with_the_option(dataset: str, folder, flag: str, value: str):
    """The toy study of the conditioned batch and random texts run by the CLI with ``flag value``: its table's text,
    and the study its ``study.json`` gives with the option left out (as one written before the option existed)."""
    from lvgp.experiments.cli import main
    from lvgp.experiments.study import load_study

    out = folder / "out"
    argv = ["compare", "active", "--dataset", dataset, "--budget", "13", "--batch", "5", "--splits", "1"]
    argv += ["--test-size", "15", "--ldk-max-iter", "5", "--out", str(out), "--quiet", flag, value]
    assert main([*argv, "--strategies", "gp-pool-greedy-epig,random"]) == 0
    settings = json.loads((out / "study.json").read_text())
    option = flag.removeprefix("--").replace("-", "_")
    assert settings.pop(option) == value
    (folder / "old").mkdir()
    (folder / "old" / "study.json").write_text(json.dumps(settings))
    return (out / "table.md").read_text(), load_study(folder / "old")


@pytest.mark.parametrize("share", [0.0, 0.4])
def test_a_random_share_of_the_batch_is_drawn_from_what_the_acquisition_left(toy_topics_tsv, share, monkeypatch):
    """``--random-share`` (0 in the studies): of a batch of 5, ``round(5 share)`` texts are drawn at random from the
    pool texts the acquisition's top-k left, the others are its top-k; share 0 is the top-k batch alone."""
    from lvgp.experiments import active
    from lvgp.models import acquisition

    pools: list[list[str]] = []

    def scores(model, kind, pool, seed, targets=None):  # the pool's order is the ranking
        pools.append(list(pool))
        return -np.arange(len(pool), dtype=np.float64)

    monkeypatch.setattr(acquisition, "acquisition_scores", scores)
    study = active.ActiveStudy(
        dataset=toy_topics_tsv, budget=13, batch=5, splits=1, strategies=("gp-entropy",), test_size=15, ldk_max_iter=3,
        random_share=share,
    )  # fmt: skip
    record = active.run_cell(study, {"method": "gp-entropy", "split": 0})
    assert [p["labels"] for p in record["curve"]] == [3, 8, 13]
    first, second = pools
    chosen = [t for t in first if t not in second]
    n_random = round(5 * share)
    assert len(chosen) == 5 and chosen[: 5 - n_random] == first[: 5 - n_random]  # the top-k part
    if n_random:  # the rest not the next two of the ranking (2 drawn of the 39 left: those two with odds 1/741)
        assert chosen[5 - n_random :] != first[5 - n_random : 5]
        rng = active.Streams.of_seed(0).numpy("active mixed random 0")
        left = np.setdiff1d(np.arange(len(first)), np.arange(5 - n_random))
        assert sorted(chosen[5 - n_random :]) == sorted(first[i] for i in rng.choice(left, n_random, replace=False))


def test_the_acquisitions_settings_are_study_options_named_in_the_table(toy_topics_tsv, tmp_path, monkeypatch, capsys):
    """``--power-beta``, ``--greedy-beta``, ``--epig-targets`` and ``--random-share`` reach the acquisition (the
    exponents handed to :func:`power_batch` and :func:`conditioned_power_batch`, the target texts of each round, the
    batch's random part), are recorded in ``study.json``,
    named in the table's note when away from their defaults (and not otherwise), and bad values are refused by
    name; a ``study.json`` written before the options existed reads back with the defaults."""
    from lvgp.experiments.cli import main
    from lvgp.experiments.study import load_study
    from lvgp.models import acquisition

    betas, target_counts, batch_sizes, pool_sizes, greedy_betas = [], [], [], [], []
    original_batch, original_scores = acquisition.power_batch, acquisition.acquisition_scores
    original_conditioned = acquisition.conditioned_power_batch

    def conditioned_power_batch(model, texts, targets, scores, k, rng, beta, seed):
        greedy_betas.append(beta)
        return original_conditioned(model, texts, targets, scores, k, rng, beta, seed)

    def power_batch(scores, k, rng, beta=acquisition.POWER_BETA):
        betas.append(beta)
        batch_sizes.append(k)
        return original_batch(scores, k, rng, beta)

    def scores(model, kind, pool, seed, targets=None):
        target_counts.append(len(targets))
        pool_sizes.append(len(pool))
        return original_scores(model, kind, pool, seed, targets)

    monkeypatch.setattr(acquisition, "power_batch", power_batch)
    monkeypatch.setattr(acquisition, "acquisition_scores", scores)
    monkeypatch.setattr(acquisition, "conditioned_power_batch", conditioned_power_batch)
    argv = ["compare", "active", "--dataset", toy_topics_tsv, "--budget", "13", "--batch", "5", "--splits", "1"]
    argv += ["--test-size", "15", "--ldk-max-iter", "3", "--quiet", "--strategies", "gp-power-epig"]
    out = tmp_path / "set"
    argv_set = [*argv, "--out", str(out), "--power-beta", "2", "--epig-targets", "7", "--random-share", "0.2"]
    argv_set[argv_set.index("gp-power-epig")] += ",gp-pool-greedy-epig"
    assert main([*argv_set, "--greedy-beta", "3"]) == 0
    assert betas == [2.0, 2.0] and target_counts == [7, 7] * 2 and batch_sizes == [4, 4]  # one of 5 drawn at random
    assert greedy_betas == [3.0, 3.0]
    settings = json.loads((out / "study.json").read_text())
    assert (settings["power_beta"], settings["epig_targets"], settings["random_share"]) == (2.0, 7, 0.2)
    assert settings["greedy_beta"] == 3.0
    table = (out / "table.md").read_text()
    assert "exponent 2 (--power-beta; default 1)" in table and "target texts 7 a round (--epig-targets" in table
    assert "The conditioned batch's exponent 3 (--greedy-beta; default 2)" in table
    assert "A share of 0.2 of each acquired batch drawn at random (--random-share; default 0)" in table

    for seen in (betas, target_counts, batch_sizes, pool_sizes):
        seen.clear()
    assert main([*argv, "--out", str(tmp_path / "default")]) == 0
    assert betas == [1.0, 1.0] and batch_sizes == [5, 5]
    assert target_counts == [min(100, n) for n in pool_sizes] == [42, 37]  # the toy pool has fewer than 100 texts
    assert "--power-beta" not in (tmp_path / "default" / "table.md").read_text()

    old = {k: v for k, v in settings.items() if k not in ("power_beta", "greedy_beta", "epig_targets", "random_share")}
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "study.json").write_text(json.dumps(old))
    study = load_study(tmp_path / "old")
    assert (study.power_beta, study.greedy_beta, study.epig_targets, study.random_share) == (1.0, 2.0, 100, 0.0)

    capsys.readouterr()
    for flag, value in (
        ("--random-share", "1.5"),
        ("--power-beta", "0"),
        ("--greedy-beta", "0"),
        ("--epig-targets", "0"),
    ):
        with pytest.raises(SystemExit) as exited:
            main([*argv, "--out", str(tmp_path / "bad"), flag, value])
        assert exited.value.code == 2 and flag in capsys.readouterr().err, flag


def test_a_runs_fit_seconds_count_the_models_making(toy_topics_tsv, monkeypatch):
    """The pool strategies' cluster parts are made with the model, once a seed, outside ``fit``: a run's
    ``fit_seconds`` counts the model's making too (here a making that takes 0.2 s, for each of the 3 rounds)."""
    import time

    from lvgp.experiments import active

    study = active.ActiveStudy(dataset=toy_topics_tsv, budget=13, batch=5, splits=1, test_size=15)
    build = active.ActiveStudy.estimator

    def slow_estimator(self, cell, data=None):
        time.sleep(0.2)
        return build(self, cell, data)

    monkeypatch.setattr(active.ActiveStudy, "estimator", slow_estimator)
    record = active.run_cell(study, {"method": "logreg-entropy", "split": 0, "params": {}})
    assert [p["labels"] for p in record["curve"]] == [3, 8, 13] and record["fit_seconds"] >= 0.6
