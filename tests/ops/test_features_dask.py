"""ReadabilityFeatures.fit on Dask collections: the same artifact as the in-memory fit, bit for bit.

One local cluster of two worker *processes* per module (so partitions really are pickled to other
interpreters); the exact-sum helper is checked against ``math.fsum`` with hypothesis.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triton_textops import ReadabilityFeatures
from triton_textops.errors import InputError
from triton_textops.ops.features_dask import exact_sum, is_dask_collection

dask = pytest.importorskip("dask")
db = pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """A bounded local cluster: 2 worker processes x 1 thread, closed after the module."""
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit="1GiB"
    )
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


@pytest.fixture(scope="module")
def reference(austen):
    return ReadabilityFeatures.fit(austen)


def _same_artifact(a: ReadabilityFeatures, b: ReadabilityFeatures) -> None:
    assert a.common == b.common and a.rare == b.rare
    assert a.stopwords == b.stopwords and a.lowercase == b.lowercase
    assert a.fitted_on == b.fitted_on
    # bit-identical float32 mean/std, not merely close
    assert np.array_equal(a.mean.view(np.uint32), b.mean.view(np.uint32))
    assert np.array_equal(a.std.view(np.uint32), b.std.view(np.uint32))
    assert a.to_dict() == b.to_dict()


@pytest.mark.parametrize(("partition_size", "npartitions"), [(1400, 3), (600, 7)])
def test_bag_on_process_cluster_equals_in_memory(client, austen, reference, partition_size, npartitions):
    bag = db.from_sequence(austen, partition_size=partition_size)
    assert bag.npartitions == npartitions and is_dask_collection(bag)
    phases = []
    fitted = ReadabilityFeatures.fit(bag, progress=lambda phase, done, total: phases.append((phase, done, total)))
    _same_artifact(fitted, reference)
    n = len(austen)
    assert phases == [("tokenize", n, n), ("features", n, n)]
    # the partitions ran on the cluster's worker processes
    assert len(_workers(client)) == 2


def _workers(client) -> dict:
    """The scheduler's workers, asked for directly. ``client.scheduler_info()`` keeps its cached identity when the
    query fails with an OSError (a comm timeout on a loaded machine), and the cache it refreshes in the background
    lists no workers: once, under the full suite, it gave 0 workers. A failed query is retried, for up to 60 s."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return client.sync(client.scheduler.identity, n_workers=-1)["workers"]
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def test_bytes_cased_other_sizes_and_empty_partition(client, austen):
    texts = [t.encode("utf-8") for t in austen[:1500]]
    opts = {"lowercase": False, "n_common": 40, "n_rare": 60, "stopwords": "nltk-198"}
    ref = ReadabilityFeatures.fit(texts, **opts)
    # uneven partitions, one of them empty, one larger than the fit's 1024-text chunk
    pieces = [texts[:1100], [], texts[1100:1101], texts[1101:]]
    bag = db.from_delayed([dask.delayed(list)(p) for p in pieces])
    _same_artifact(ReadabilityFeatures.fit(bag, **opts), ref)


def test_dataframe_column(client, austen, reference):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(pd.DataFrame({"text": austen}), npartitions=5)
    _same_artifact(ReadabilityFeatures.fit(frame["text"]), reference)
    small = austen[:300]
    one_column = dd.from_pandas(pd.DataFrame({"text": small}), npartitions=2)  # a one-column frame is its column
    _same_artifact(ReadabilityFeatures.fit(one_column, n_common=20, n_rare=20),
                   ReadabilityFeatures.fit(small, n_common=20, n_rare=20))
    with pytest.raises(TypeError, match="one column"):
        ReadabilityFeatures.fit(dd.from_pandas(pd.DataFrame({"a": austen, "b": austen}), npartitions=2))


def test_errors_match_the_in_memory_fit(client):
    with pytest.raises(ValueError, match="fewer than n_common \\+ n_rare = 200"):
        ReadabilityFeatures.fit(db.from_sequence(["the cat sat on the mat"] * 3, npartitions=2))
    with pytest.raises(ValueError, match="empty corpus"):
        ReadabilityFeatures.fit(db.from_delayed([dask.delayed(list)([])]))
    corpus = [f"text number {i}" for i in range(2300)]
    corpus[1200 + 1050] = b"broken \xc3"  # partition 1 (1200 texts each), row 1050 of it: second chunk
    with pytest.raises(InputError, match="partition 1: row 1050"):
        ReadabilityFeatures.fit(db.from_sequence(corpus, partition_size=1200), n_common=1, n_rare=1)
    with pytest.raises(TypeError, match="dask.bag.Bag"):
        ReadabilityFeatures.fit(dask.delayed(["a delayed list is not a partitioned collection"]))


def test_small_corpus_ties_like_in_memory(client):
    texts = ["a b c d", "d e f", "f f g", "Zebra zebra! a."]
    ref = ReadabilityFeatures.fit(texts, n_common=3, n_rare=3)
    _same_artifact(ReadabilityFeatures.fit(db.from_sequence(texts, npartitions=3), n_common=3, n_rare=3), ref)


# ------------------------------------------------------------------------------------ exact sums

_finite = st.floats(allow_nan=False, allow_infinity=False, width=64, min_value=-1e300, max_value=1e300)


@settings(max_examples=200, deadline=None)
@given(st.lists(_finite, max_size=50))
def test_exact_sum_is_fsum(values):
    assert float(exact_sum(values)) == math.fsum(values)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_finite, st.integers(0, 40)), max_size=30), st.integers(1, 4))
def test_exact_sum_with_counts_combines_exactly(pairs, split):
    values = [v for v, _ in pairs]
    counts = [c for _, c in pairs]
    expanded = [v for v, c in pairs for _ in range(c)]
    assert float(exact_sum(values, counts)) == math.fsum(expanded)
    # partial exact sums over any split add up to the whole, so partitions combine without rounding
    cut = len(values) // split
    parts = exact_sum(values[:cut], counts[:cut]) + exact_sum(values[cut:], counts[cut:])
    assert parts == exact_sum(values, counts)


def test_exact_sum_subnormals_and_errors():
    tiny = [5e-324, 5e-324, -1e-310, 2.0**-1022]
    assert float(exact_sum(tiny)) == math.fsum(tiny)
    assert exact_sum([1e308, 1e308, -1e308]) == exact_sum([1e308])
    with pytest.raises(ValueError, match="finite"):
        exact_sum([float("inf")])
    with pytest.raises(ValueError, match="same length"):
        exact_sum([1.0, 2.0], [1])
