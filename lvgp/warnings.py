"""Warning categories of lvgp (filter them with :mod:`warnings` as usual)."""


class LVGPWarning(UserWarning):
    """Base class of lvgp's warnings."""


class UnseenWordsWarning(LVGPWarning):
    """Words unknown to a fitted vocabulary were dropped; the message counts them."""


class EmptyDocumentsWarning(LVGPWarning):
    """Documents without any known word were met; the message says how they were handled."""


class TruncationWarning(LVGPWarning):
    """Documents longer than a requested width were truncated; the message counts them."""


class MemoryBudgetWarning(LVGPWarning):
    """An exact computation would exceed the memory budget, so an approximation was chosen."""


class MissingEmbeddingsWarning(LVGPWarning):
    """Vocabulary words have no pretrained vector; the message counts them."""
