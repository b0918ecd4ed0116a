"""Data sets: synthetic corpora with known structure, and (see the loaders) real data."""

from .loaders import (
    CORPORA,
    ClassificationCorpus,
    RegressionCorpus,
    WordEmbeddings,
    corpus_names,
    load_breast_cancer,
    load_corpus,
    load_gettext_pairs,
    load_review_snippets,
    load_text_classification,
    load_word_embeddings,
    read_aligned_pairs,
    read_categorical_csv,
    read_classification_tsv,
    read_regression_tsv,
)
from .registry import DataUnavailableError, data_home
from .synthetic import SyntheticCorpus, TopicCorpus, make_slda_corpus, make_synonym_regression, synonym_embeddings

__all__ = [
    "SyntheticCorpus",
    "make_synonym_regression",
    "synonym_embeddings",
    "make_slda_corpus",
    "TopicCorpus",
    "RegressionCorpus",
    "ClassificationCorpus",
    "WordEmbeddings",
    "CORPORA",
    "corpus_names",
    "load_corpus",
    "load_breast_cancer",
    "load_gettext_pairs",
    "load_review_snippets",
    "load_text_classification",
    "load_word_embeddings",
    "read_regression_tsv",
    "read_classification_tsv",
    "read_categorical_csv",
    "read_aligned_pairs",
    "DataUnavailableError",
    "data_home",
]
