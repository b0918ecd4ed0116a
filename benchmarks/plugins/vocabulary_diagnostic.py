"""A ``--plugin`` of the regression study's vocabulary diagnostic (``benchmarks/README.md``, "Why lvgp's default
GP-LVSM loses to ridge on tf-idf"): two methods that differ from a built-in one in their words alone.

    PYTHONPATH=benchmarks/plugins lvgp compare regression --dataset amazon-snippets --splits 5 --train-size 1000 \\
        --dev-size 1000 --threads 1 --jobs 2 --plugin vocabulary_diagnostic \\
        --methods gplvsm-default-negations,tfidf-ridge-study-vocab,gplvsm-default --out runs/vocabulary/amazon-snippets

- ``gplvsm-default-negations``: lvgp's default GP-LVSM (``gplvsm-default``) on the study's vocabulary but with the
  negations kept (scikit-learn's English stop words but :data:`~lvgp.bow.vocabulary.NEGATIONS`);
- ``tfidf-ridge-study-vocab``: the study's ``tfidf-ridge`` on the GP's words (scikit-learn's English stop words, the
  negations among them, out; words of three letters or more and of ``--min-df`` training sentences).
"""

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

from lvgp.bow.vocabulary import ENGLISH_STOP_WORDS_BUT_NEGATIONS, Vocabulary
from lvgp.experiments.registry import register_method


@register_method(
    "regression",
    "gplvsm-default-negations",
    "GP-LVSM (lvgp's default), negations kept",
    description="gplvsm-default on the study's vocabulary with the negations kept",
)
def default_with_negations(study, cell, data):
    from lvgp import GPLVSMRegressor

    vocabulary = Vocabulary(
        min_df=study.min_df, min_token_len=study.min_token_len, stop_words=sorted(ENGLISH_STOP_WORDS_BUT_NEGATIONS)
    )
    return GPLVSMRegressor(vocabulary=vocabulary, random_state=study.cell_seed(cell))


@register_method(
    "regression",
    "tfidf-ridge-study-vocab",
    "Ridge (tf-idf), the GP's words",
    uses_dev=True,
    description="tfidf-ridge on the words of the study's vocabulary (every English stop word out, 3+ letters)",
)
def tfidf_ridge_on_the_gps_words(study, cell, data):
    from lvgp.baselines.linear import TfidfRidge

    words = TfidfVectorizer(
        sublinear_tf=True,
        stop_words=sorted(ENGLISH_STOP_WORDS),
        min_df=study.min_df,
        token_pattern=rf"(?u)\b\w{{{study.min_token_len},}}\b",
    )
    return TfidfRidge(vectorizer=words, random_state=study.cell_seed(cell))
