"""Packed documents (issue 37): the encoder's features and the word-index sets in one tensor, each
kernel part on its own columns. References: each part equals its base kernel on the unpacked
input; the three-part GP's prediction equals the closed-form posterior built from the parts'
Gram matrices; padding (wider test documents) changes nothing."""

from __future__ import annotations

import io

import gpytorch
import pytest
import torch
from gpytorch.kernels import LinearKernel, MaternKernel, RBFKernel, ScaleKernel

from lvgp import PAD, BagOfWordsKernel, LatentDistributionKernel, PaddedExactGP
from lvgp.bow import pad_to_width
from lvgp.bow.padded import _PADDED_COPIES as padded_copies
from lvgp.bow.padded import padded_source
from lvgp.kernels import FeatureKernel, WordSetKernel, pack_documents, unpack_documents

V, D = 12, 5


def _data(n: int, width: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (n, width), generator=g)
    ids[:, -1] = torch.where(torch.rand(n, generator=g) < 0.5, PAD, ids[:, -1])
    return ids, torch.randn(n, D, generator=g, dtype=torch.float64)


def test_pack_round_trip_and_bad_inputs():
    ids, feats = _data(6, 4, 0)
    x = pack_documents(ids, feats)
    assert x.shape == (6, D + 4) and x.dtype == torch.float64
    back_ids, back_feats = unpack_documents(x, D)
    assert torch.equal(back_ids, ids) and torch.equal(back_feats, feats)
    with pytest.raises(ValueError, match="same documents"):
        pack_documents(ids, feats[:5])
    with pytest.raises(TypeError, match="integer tensor"):
        pack_documents(ids.double(), feats)
    with pytest.raises(TypeError, match="floating"):
        pack_documents(ids, ids)
    bad = feats.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match=r"rows \[3\]"):
        pack_documents(ids, bad)
    with pytest.raises(ValueError, match="feature_dim"):
        FeatureKernel(RBFKernel(), 0)
    with pytest.raises(TypeError, match="packed documents"):
        WordSetKernel(BagOfWordsKernel(V), D)(ids).to_dense()
    with pytest.raises(ValueError, match=r"word ids >= num_words=7 .* in rows"):
        WordSetKernel(BagOfWordsKernel(V - 5), D)(x).to_dense()
    x_bad = x.clone()
    x_bad[2, D + 1] = 0.5
    with pytest.raises(ValueError, match=r"not integers in rows \[2\]"):
        WordSetKernel(BagOfWordsKernel(V), D)(x_bad).to_dense()


@pytest.mark.parametrize("base", [RBFKernel(), MaternKernel(nu=2.5), LinearKernel()], ids=["rbf", "matern", "linear"])
def test_each_part_is_its_base_kernel_on_its_columns(base):
    ids1, f1 = _data(7, 4, 1)
    ids2, f2 = _data(5, 6, 2)  # another width: padded inside
    x1, x2 = pack_documents(ids1, f1), pack_documents(ids2, f2)
    base = base.double()
    torch.testing.assert_close(FeatureKernel(base, D)(x1, x2).to_dense(), base(f1, f2).to_dense())
    torch.testing.assert_close(FeatureKernel(base, D)(x1, diag=True), base(f1, diag=True))
    unit1, unit2 = (torch.nn.functional.normalize(f, dim=-1) for f in (f1, f2))
    torch.testing.assert_close(FeatureKernel(base, D, normalize=True)(x1, x2).to_dense(), base(unit1, unit2).to_dense())
    ldk = LatentDistributionKernel(V, 2, seed=0).double()
    torch.testing.assert_close(WordSetKernel(ldk, D)(x1, x2).to_dense(), ldk(ids1, ids2).to_dense())
    torch.testing.assert_close(WordSetKernel(ldk, D)(x1, diag=True), ldk(ids1, diag=True))


def test_cosine_of_unit_features():
    ids, f = _data(4, 3, 3)
    k = FeatureKernel(LinearKernel(), D, normalize=True).double()
    k.base.variance = 1.0
    gram = k(pack_documents(ids, f)).to_dense()
    unit = torch.nn.functional.normalize(f, dim=-1)
    torch.testing.assert_close(gram, unit @ unit.T)
    torch.testing.assert_close(gram.diagonal(), torch.ones(4, dtype=torch.float64))


def test_gradients_reach_every_part_and_word_ids_are_reused():
    ids, f = _data(8, 5, 4)
    x = pack_documents(ids, f)
    ldk = LatentDistributionKernel(V, 2, seed=0).double()
    word_part = WordSetKernel(ldk, D)
    covar = ScaleKernel(word_part) + ScaleKernel(FeatureKernel(RBFKernel(), D)).double()
    covar = covar.double()
    covar(x).to_dense().sum().backward()
    grads = {name: p.grad for name, p in covar.named_parameters()}
    assert all(g is not None and torch.isfinite(g).all() and g.abs().sum() > 0 for g in grads.values()), grads
    first = word_part.word_ids(x)
    assert word_part.word_ids(x) is first  # same tensor: the LDK's document-set cache hits


def _three_part_kernel():
    return (
        ScaleKernel(WordSetKernel(BagOfWordsKernel(V), D))
        + ScaleKernel(WordSetKernel(LatentDistributionKernel(V, 2, seed=0), D))
        + ScaleKernel(FeatureKernel(RBFKernel(), D))
    ).double()


class ThreePartGP(PaddedExactGP):
    def __init__(self, x, y, likelihood):
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = _three_part_kernel()

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def test_three_part_gp_trains_and_predicts_the_closed_form_posterior():
    ids, f = _data(30, 6, 5)
    y = torch.sin(f[:, 0]) + 0.1 * (ids == 3).sum(-1).double()
    x = pack_documents(ids, f)
    likelihood = gpytorch.likelihoods.GaussianLikelihood().double()
    model = ThreePartGP(x, y, likelihood).double()
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    model.train()
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = -mll(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    model.eval()
    ids_t, f_t = _data(9, 3, 6)
    x_t = pack_documents(ids_t, f_t)  # narrower than the training documents
    with torch.no_grad(), gpytorch.settings.fast_pred_var(False):
        pred = likelihood(model(x_t))
        mean, var = pred.mean, pred.variance
        # closed form: the parts' Grams on unpacked inputs
        k = model.covar_module
        width = max(ids.shape[-1], ids_t.shape[-1])
        a, b = pad_to_width(ids, width), pad_to_width(ids_t, width)
        xa, xb = pack_documents(a, f), pack_documents(b, f_t)
        K = k(xa).to_dense() + likelihood.noise * torch.eye(30, dtype=torch.float64)
        Ks = k(xb, xa).to_dense()
        Kss = k(xb, diag=True)
        m = model.mean_module.constant
        expected_mean = m + Ks @ torch.linalg.solve(K, y - m)
        expected_var = Kss - (Ks * torch.linalg.solve(K, Ks.T).T).sum(-1) + likelihood.noise
    torch.testing.assert_close(mean, expected_mean, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(var, expected_var, atol=1e-6, rtol=1e-6)


def test_a_padded_copy_reads_its_sources_word_ids_until_either_changes():
    """Packed documents are padded to a common width at every kernel call: the copy's word ids are its
    source's, converted and checked once (the same tensor), and its Gram is the source's; a copy or a
    source changed in place is read again, never from a stale source."""
    ids, f = _data(6, 4, 7)
    x = pack_documents(ids, f)
    word_part = WordSetKernel(LatentDistributionKernel(V, 2, seed=0), D).double()
    wide = pad_to_width(x, x.shape[-1] + 3)
    assert padded_source(wide) is x and padded_source(pad_to_width(ids, 9)) is None  # integer sets: no mark
    first = word_part.word_ids(x)
    assert word_part.word_ids(wide) is first
    assert padded_source(pad_to_width(wide, wide.shape[-1] + 2)) is x  # a copy of a copy: the first source
    with torch.no_grad():
        torch.testing.assert_close(word_part(wide).to_dense(), word_part(x).to_dense(), atol=0, rtol=0)
    changed = pad_to_width(x, x.shape[-1] + 1)
    changed[0, D] = (changed[0, D] + 1) % V  # another word for document 0
    assert padded_source(changed) is None
    assert torch.equal(word_part.word_ids(changed)[0, :4], unpack_documents(changed, D)[0][0, :4])
    copy = pad_to_width(x, x.shape[-1] + 1)
    x[1, D] = PAD  # the source changes after its copy was made
    assert padded_source(copy) is None
    assert torch.equal(word_part.word_ids(copy), unpack_documents(copy, D)[0])
    bad = pad_to_width(x, x.shape[-1] + 1)
    bad[2, D] = V  # an id out of range in the copy alone is still caught
    with pytest.raises(ValueError):
        word_part.word_ids(bad)
    buffer = io.BytesIO()
    torch.save(copy, buffer)
    assert padded_source(torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)) is None  # nothing saved
    with torch.inference_mode():
        made = pack_documents(ids, f)
    assert padded_source(pad_to_width(made, made.shape[-1] + 1)) is None  # an inference tensor has no versions
    before = len(padded_copies)
    del wide, changed, copy, bad
    assert len(padded_copies) < before  # a copy's record goes with it
