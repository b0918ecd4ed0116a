"""The active study's ``--pool-words lsa`` part and the open-set study's ``--unlabeled-words lsa`` (issue 57): a
cluster kernel whose cloud joins each text's encoder vector to its words' coordinates, read from the encoder vectors
its learner's kernel sees (:class:`JoinedCloudClusterKernel`), and the one way to make it from texts
(:func:`words_cluster_kernel_of_texts`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .._random import NUMERICS_SEED
from ..encoders import SentenceEncoder
from ..encoders.sentence import check_texts
from ..kernels import ClusterKernel
from ..kernels.point_cloud import _first_rows, check_finite_rows, nearest_cloud_points, row_digests
from .cluster_parts import cluster_part_settings

#: an input is a known text's encoder vector where it is within this Euclidean distance of it
_SAME_VECTOR = 1e-6
#: the words' coordinates: the cloud's tf-idf reduced by a truncated SVD to this many dimensions (fewer where the cloud
#: has fewer texts or words), and their share of the joined vector's squared norm (the encoder's the rest)
WORDS_DIMENSIONS = 300
WORDS_SHARE = 0.5
#: a cloud of at most this many texts keeps words of one text (``min_df=1``); a larger one words of two texts or more
_SMALL_CLOUD = 100


class JoinedCloudClusterKernel(ClusterKernel):
    r"""A :class:`~lvgp.kernels.ClusterKernel` whose cloud, graph and neighbours live in a joined space -- a text's
    encoder unit vector beside its words' coordinates -- while its inputs are the encoder unit vectors of texts known
    when it was made (a composed GP's encoder columns). An input is read as the joined vector of the known text whose
    encoder vector it is: the first of ``inputs`` with its very values, else the nearest within 1e-6 (another
    rounding of the same vector); any other input is a ``ValueError`` naming its rows. More texts are made known by
    :meth:`add_inputs` (their vectors) or :meth:`read_texts` (their texts, where the kernel has a ``texts_reader``,
    as :func:`words_cluster_kernel_of_texts` gives it): the cloud, its graph and spectrum do not move, so a known
    text's kernel values neither.

    Args:
        cloud: ``n_P x D``, the joined vectors of the cloud's texts.
        inputs: ``m x d``, the encoder unit vectors of every text the kernel will read (the cloud's among them).
        joined_inputs: ``m x D``, their joined vectors, row by row.
        texts_reader: ``None``, or a callable of texts giving their ``inputs`` and ``joined_inputs`` rows (what
            :meth:`read_texts` calls; :class:`JoinedVectorsOfTexts`). Not part of the state dict.
        **kwargs: :class:`~lvgp.kernels.ClusterKernel`'s (``n_components``, ``n_neighbors``, ``power``).

    Shapes: ``x1``: ``*B x n1 x d``, ``x2``: ``*B x n2 x d`` -> ``*B x n1 x n2``.
    """

    inputs: Tensor
    joined_inputs: Tensor
    #: each input's known row, by a digest of its values (:func:`~lvgp.kernels.point_cloud.row_digests`): the rows
    #: of ``inputs`` themselves, made when first read, and the inputs matched to a row by distance since
    _known_rows: dict[bytes, int] | None

    def __init__(
        self,
        cloud: Tensor,
        *,
        inputs: Tensor,
        joined_inputs: Tensor,
        texts_reader: Callable[[Sequence[str]], tuple[Tensor, Tensor]] | None = None,
        **kwargs: Any,
    ) -> None:
        _check_known(inputs, joined_inputs, cloud.shape[-1], None)
        super().__init__(cloud, **kwargs)
        self.register_buffer("inputs", inputs.detach().clone().to(cloud.dtype))
        self.register_buffer("joined_inputs", joined_inputs.detach().clone().to(cloud.dtype))
        self.texts_reader = texts_reader

    def add_inputs(self, inputs: Tensor, joined_inputs: Tensor) -> JoinedCloudClusterKernel:
        """Make more texts known: their encoder unit vectors ``inputs`` (``k x d``) and joined vectors
        ``joined_inputs`` (``k x D``), row by row; a row whose encoder vector is known already (the very values) is
        skipped, so that reading the same texts again does not grow the kernel. The cloud does not move. Returns
        ``self``."""
        _check_known(inputs, joined_inputs, self.cloud.shape[-1], self.inputs.shape[-1])
        inputs = inputs.detach().to(self.inputs)
        joined_inputs = joined_inputs.detach().to(self.joined_inputs)
        known = self._digest_index()
        new: list[int] = []
        for row, key in enumerate(row_digests(inputs)):
            if key not in known:
                known[key] = len(self.inputs) + len(new)
                new.append(row)
        if new:
            self.inputs = torch.cat([self.inputs, inputs[new]])
            self.joined_inputs = torch.cat([self.joined_inputs, joined_inputs[new]])
        return self

    def read_texts(self, texts: Sequence[str]) -> JoinedCloudClusterKernel:
        """Make ``texts`` known (:meth:`add_inputs` of what the kernel's ``texts_reader`` gives for them: for a
        kernel of :func:`words_cluster_kernel_of_texts`, the joined vectors they would have had if named when it was
        made). Returns ``self``.

        Raises:
            TypeError: ``texts`` are not texts, or the kernel has no ``texts_reader`` (made from vectors: give the
                new texts' vectors to :meth:`add_inputs`)."""
        if self.texts_reader is None:
            raise TypeError(
                "this kernel was made from vectors and has no texts_reader: give the new texts' vectors to add_inputs"
            )
        texts = check_texts(texts, "texts")
        return self.add_inputs(*self.texts_reader(texts)) if texts else self

    def _digest_index(self) -> dict[bytes, int]:
        """:attr:`_known_rows`, made from the known vectors' digests when first needed (the first row of equal
        vectors)."""
        if self._known_rows is None:
            self._known_rows = {}
            for row, key in enumerate(row_digests(self.inputs)):
                self._known_rows.setdefault(key, row)
        return self._known_rows

    def known_rows(self, x: Tensor) -> Tensor:
        """The row of ``inputs`` (and ``joined_inputs``) of each input: ``*B x n x d`` -> ``*B x n`` indices. An
        input with the very values of a row is found by its digest; any other is searched for among the rows and
        remembered (an active learner reads the same pool texts and test documents round after round)."""
        flat = x.reshape(-1, x.shape[-1]).to(self.inputs.dtype)
        return self._rows_of(flat).reshape(x.shape[:-1])

    def _rows_of(self, flat: Tensor, positions: list[int] | None = None) -> Tensor:
        """:meth:`known_rows` of ``flat[positions]`` (``None``: every row of ``flat``, ``n x d``); an error names
        every row of ``flat`` with an unknown input's values."""
        queries = flat if positions is None else flat[positions]
        known_rows = self._digest_index()
        keys = row_digests(queries)
        missing = _first_rows(keys, known_rows)  # an input repeated in the call: searched for once
        if missing:
            unknown = queries[missing]
            known = nearest_cloud_points(unknown, self.inputs, 1, exclude_exact=False)[:, 0]
            far = ((unknown - self.inputs[known]).norm(dim=-1) > _SAME_VECTOR).nonzero().flatten()
            if len(far):  # every row of flat with those values named (positions may hold the first of each alone)
                far_keys = {keys[missing[i]] for i in far.tolist()}
                bad = [i for i, key in enumerate(keys if queries is flat else row_digests(flat)) if key in far_keys]
                raise ValueError(
                    f"rows {bad[:10]} of the inputs ({len(bad)} of {len(flat)}) are not the encoder vectors of a "
                    "text this kernel knows: make their texts known first (read_texts, or add_inputs)"
                )
            for i, row in zip(missing, known.tolist()):
                known_rows[keys[i]] = row
        rows = [known_rows[key] for key in keys]
        return torch.as_tensor(rows, dtype=torch.long, device=self.inputs.device)

    def joined(self, x: Tensor) -> Tensor:
        """The joined vectors of inputs ``x``: ``*B x n x d`` -> ``*B x n x D`` (:meth:`known_rows`)."""
        return self.joined_inputs[self.known_rows(x)]

    def _search(self, flat: Tensor, positions: list[int]) -> Tensor:
        """The cloud neighbours of the inputs ``flat[positions]`` (``n x d``; those not remembered yet), found in the
        joined space: ``k x n_neighbors`` (:func:`~lvgp.kernels.point_cloud.nearest_cloud_points` of their known
        texts' joined vectors, :meth:`known_rows`; a cloud point not its own neighbour), each known text once a
        call. :meth:`~lvgp.kernels.ClusterKernel.nearest` remembers them by the digest of each input's values."""
        rows, inverse = self._rows_of(flat, positions).unique(return_inverse=True)  # another rounding: once
        return nearest_cloud_points(self.joined_inputs[rows], self.cloud, self.n_neighbors)[inverse]

    def _forget_neighbours(self) -> None:
        super()._forget_neighbours()
        self._known_rows = None

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        # a saved kernel may know more texts than this one (add_inputs): its known vectors are taken at their size
        for name in ("inputs", "joined_inputs"):
            saved = state_dict.get(prefix + name)
            if saved is not None and saved.shape != self._buffers[name].shape:
                self._buffers[name] = self._buffers[name].new_empty(saved.shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def _check_known(inputs: Tensor, joined_inputs: Tensor, width: int, dim: int | None) -> None:
    """``inputs`` ``m x d`` (``d = dim`` where given) and ``joined_inputs`` ``m x width``, finite tensors."""
    if not (torch.is_tensor(inputs) and torch.is_tensor(joined_inputs)):
        raise TypeError(
            f"inputs and joined_inputs must be tensors; got {type(inputs).__name__} and {type(joined_inputs).__name__}"
        )
    if (
        inputs.ndim != 2
        or joined_inputs.ndim != 2
        or len(joined_inputs) != len(inputs)
        or joined_inputs.shape[-1] != width
        or (dim is not None and inputs.shape[-1] != dim)
    ):
        what = "m x d" if dim is None else f"m x {dim} (the known vectors' width)"
        raise ValueError(
            f"inputs ({tuple(inputs.shape)}) and joined_inputs ({tuple(joined_inputs.shape)}) must be {what} and "
            f"m x {width} (the cloud's width)"
        )
    check_finite_rows(inputs, "inputs")
    check_finite_rows(joined_inputs, "joined_inputs")


class JoinedVectorsOfTexts:
    """The map of :func:`words_cluster_kernel_of_texts` from texts to a :class:`JoinedCloudClusterKernel`'s known
    vectors: ``texts`` -> (``m x d`` encoder unit vectors, normalized as a GP's encoder columns are; ``m x D`` joined
    vectors: each text's encoder unit vector, scikit-learn's normalization, beside its words' coordinates -- the
    cloud's fitted tf-idf and truncated SVD, normalized -- :data:`WORDS_SHARE` of the squared norm). The kernel's
    ``texts_reader``.

    Args:
        encoder: a name of :data:`lvgp.encoders.ENCODERS` or a :class:`~lvgp.encoders.SentenceEncoder`.
        device: the encoder's device.
        tfidf: the fitted tf-idf vectorizer of the words (scikit-learn's).
        svd: the fitted truncated SVD of its vectors (scikit-learn's).
    """

    def __init__(self, encoder: str | SentenceEncoder, device: str, tfidf: Any, svd: Any) -> None:
        self.encoder, self.device, self.tfidf, self.svd = encoder, device, tfidf, svd

    def __call__(self, texts: Sequence[str]) -> tuple[Tensor, Tensor]:
        from sklearn.preprocessing import normalize

        from ..encoders import resolve_encoder

        raw = np.asarray(resolve_encoder(self.encoder, self.device).encode(list(texts)), dtype=np.float64)
        words = normalize(self.svd.transform(self.tfidf.transform(texts)))
        joined = np.hstack([np.sqrt(1 - WORDS_SHARE) * normalize(raw), np.sqrt(WORDS_SHARE) * words])
        # the inputs: the GP's encoder columns to the bit (FeatureKernel's normalization), so that its inputs are found
        # by digest; the joined vectors keep scikit-learn's (the studies' records unchanged)
        return torch.nn.functional.normalize(torch.as_tensor(raw), dim=-1), torch.as_tensor(joined)


def words_cluster_kernel_of_texts(
    encoder: str | SentenceEncoder,
    device: str,
    cloud_texts: Sequence[str],
    other_texts: Sequence[str],
    n_classes: int,
) -> JoinedCloudClusterKernel:
    r"""A :class:`JoinedCloudClusterKernel` whose cloud is ``cloud_texts`` (the unlabelled pool, the labelled texts
    among them), each text's encoder unit vector joined to its words' coordinates, :data:`WORDS_SHARE` of the
    squared norm: the sublinear tf-idf (:func:`~lvgp.baselines.encoder.default_tfidf`; words of two cloud texts or
    more, of one in a cloud of 100 texts or fewer) fitted on the cloud's texts, reduced by a truncated SVD to
    :data:`WORDS_DIMENSIONS` dimensions and normalized. No label is read. ``encoder``: a name of
    :data:`lvgp.encoders.ENCODERS` or a :class:`~lvgp.encoders.SentenceEncoder`.

    The kernel reads the encoder vectors of ``cloud_texts`` and ``other_texts`` (the texts it will be asked about: the
    test documents), and of texts made known later by its :meth:`~JoinedCloudClusterKernel.read_texts` (the same
    tf-idf and SVD: the joined vectors they would have had if named here); of no other text (a ``ValueError`` names
    the rows). Eigenvectors, neighbours and transfer power
    as :func:`~lvgp.experiments.cluster_parts.cluster_kernel_of_texts`, the encoder's cluster part it goes beside: a GP
    classifier's fourth part, with its own weight (the active study's ``gp-pool-*`` with ``--pool-words lsa``)."""
    from sklearn.decomposition import TruncatedSVD

    from ..baselines.encoder import default_tfidf

    cloud_texts, other_texts = check_texts(cloud_texts, "cloud_texts"), check_texts(other_texts, "other_texts")
    if len(cloud_texts) < 2:
        raise ValueError(f"cloud_texts must hold 2 texts or more, got {len(cloud_texts)}")
    n_cloud = len(cloud_texts)
    tfidf = default_tfidf(min_df=2 if n_cloud > _SMALL_CLOUD else 1).fit(cloud_texts)
    counts = tfidf.transform(cloud_texts)
    dimensions = min(WORDS_DIMENSIONS, counts.shape[1] - 1, n_cloud - 1)
    reader = JoinedVectorsOfTexts(
        encoder, device, tfidf, TruncatedSVD(dimensions, random_state=NUMERICS_SEED).fit(counts)
    )
    inputs, joined = reader(cloud_texts + other_texts)
    return JoinedCloudClusterKernel(
        joined[:n_cloud],
        inputs=inputs,
        joined_inputs=joined,
        texts_reader=reader,
        **cluster_part_settings(n_cloud, n_classes),
    )
