"""gpytorch's ``BaseKernelTestCase`` with word-index data factories (as botorch does for its
categorical kernel), shared by the suites of the document kernels: a subclass gives only
``create_kernel_no_ard``. Widths are >= 9 in the no-batch data so that the active-dims tests
keep every row non-empty; the last word of about half the rows is padding."""

from __future__ import annotations

import torch
from gpytorch.test.base_kernel_test_case import BaseKernelTestCase

from lvgp import PAD

#: the vocabulary size of the generated documents
NUM_WORDS = 40


class WordIndexKernelTestCase(BaseKernelTestCase):
    """Mixed into a ``unittest.TestCase`` by each suite (so that this base is never collected)."""

    seed = 0

    @staticmethod
    def _docs(*shape):
        x = torch.randint(0, NUM_WORDS, shape)
        x[..., -1] = torch.where(torch.rand(shape[:-1]) < 0.5, PAD, x[..., -1])
        return x

    def create_data_no_batch(self):
        return self._docs(50, 10)

    def create_data_single_batch(self):
        return self._docs(2, 3, 4)

    def create_data_double_batch(self):
        return self._docs(3, 2, 20, 4)
