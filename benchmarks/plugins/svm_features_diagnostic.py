"""A ``--plugin`` of the open-set study's SVM diagnostic (``benchmarks/README.md``, "Why the SVM leads at 50 r8 texts a
class"): the study's linear SVM (``svm``: ``BowClassifier("svm", vectorizer=default_tfidf())``) on other words, to
tell its features from its model against the tf-idf GP (``gpc-bow``: the cosine of sublinear tf-idf of lvgp's
vocabulary).

    PYTHONPATH=benchmarks/plugins lvgp compare open-set --dataset r8 --unknown-classes 2 --per-class 10,50 \\
        --splits 30 --threads 1 --jobs 1 --plugin svm_features_diagnostic --methods svm-gp-words,svm-letters \\
        --out runs/svm-features/r8

- ``svm-gp-words``: the SVM on the tf-idf GP's own features -- sublinear counts of the words of lvgp's
  :class:`~lvgp.Vocabulary` (letters only, three or more, every English stop word out), idf-weighted, unit rows;
- ``svm-letters``: the SVM on ``default_tfidf`` with tokens of letters alone (its digits out), the rest as ``svm``.
"""

from sklearn.feature_extraction.text import TfidfVectorizer

from lvgp.bow.vocabulary import ENGLISH_STOP_WORDS_BUT_NEGATIONS, Vocabulary
from lvgp.experiments.registry import register_method


def _svm(vectorizer, study, cell):
    from lvgp.baselines.text_classifiers import BowClassifier

    return BowClassifier(model="svm", vectorizer=vectorizer, random_state=study.cell_seed(cell))


@register_method(
    "open-set",
    "svm-gp-words",
    "Linear SVM (the tf-idf GP's features)",
    description="the study's svm on sublinear tf-idf of lvgp's vocabulary (gpc-bow's words); novelty score: the "
    "largest decision value",
)
def svm_on_the_gps_words(study, cell, data):
    return _svm(TfidfVectorizer(sublinear_tf=True, analyzer=Vocabulary().tokenize), study, cell)


@register_method(
    "open-set",
    "svm-letters",
    "Linear SVM (default_tfidf, letters only)",
    description="the study's svm with default_tfidf's tokens of letters alone (no digits); novelty score: the largest "
    "decision value",
)
def svm_on_letters(study, cell, data):
    letters = TfidfVectorizer(
        sublinear_tf=True, stop_words=sorted(ENGLISH_STOP_WORDS_BUT_NEGATIONS), token_pattern=r"(?u)\b[^\W\d_]{2,}\b"
    )
    return _svm(letters, study, cell)
