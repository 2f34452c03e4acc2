"""BR-Div / P-Div selection: kernel, determinants, planted diverse subsets, k-DPP sampler distribution."""

import itertools
import json

import numpy as np
import pytest
import scipy.stats

from zsceval.generation import selection
from zsceval.generation.pipeline import partners_select
from zsceval.generation.selection import (
    br_div,
    normalize_features,
    sample_k_dpp,
    select_partners,
    select_partners_p_div,
    similarity_kernel,
)


def planted_features(num_duplicates: int = 40, seed: int = 0) -> tuple[np.ndarray, list[int]]:
    """3 orthogonal behaviors (e1, e2, e3) hidden among near-duplicates of 0.3 * (1, 1, 1).

    After normalization (column max ~1) the planted rows are unit vectors, so det = 1 for the planted
    triple, while a triple with one duplicate keeps only its ~0.3 component orthogonal to the two
    planted rows (det ~0.09) and a triple with two near-parallel duplicates has det ~0.
    """
    rng = np.random.default_rng(seed)
    duplicates = 0.3 + rng.uniform(0, 0.01, size=(num_duplicates, 3))
    planted = np.eye(3)
    features = np.concatenate([duplicates[:17], planted[:1], duplicates[17:30], planted[1:], duplicates[30:]])
    positions = [17, 31, 32]
    np.testing.assert_array_equal(features[positions], planted)
    return features * 7.0, positions  # raw scale does not matter after normalization


def test_normalization_and_kernel_by_hand():
    f = np.array([[1.0, 0.0], [3.0, 2.0]])
    # column max + 1e-3 = [3.001, 2.001]
    expected = np.array([[1 / 3.001, 0.0], [3 / 3.001, 2 / 2.001]])
    np.testing.assert_allclose(normalize_features(f), expected)
    np.testing.assert_allclose(similarity_kernel(f), expected @ expected.T)
    np.testing.assert_allclose(similarity_kernel(f, normalize=False), [[1.0, 3.0], [3.0, 13.0]])


def test_br_div_is_the_subset_determinant():
    kernel = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 5.0]])
    assert br_div(kernel, [0, 1]) == pytest.approx(3.0)  # 2*2 - 1*1
    assert br_div(kernel, [0, 2]) == pytest.approx(10.0)
    assert br_div(kernel, [2]) == pytest.approx(5.0)
    with pytest.raises(ValueError):
        br_div(kernel, [0, 0])


def test_exact_selection_finds_the_planted_subset():
    features, planted = planted_features()
    result = select_partners(features, 3, rng=np.random.default_rng(0), num_samples=100_000)
    assert result.method == "exact"
    assert result.num_samples == 43 * 42 * 41 // 6
    assert result.indices == tuple(planted)
    assert result.determinant == pytest.approx(br_div(similarity_kernel(features), planted))


@pytest.mark.parametrize("sampler", ["batched", "dppy"])
def test_k_dpp_selection_finds_the_planted_subset(sampler):
    features, planted = planted_features()
    result = select_partners(
        features, 3, rng=np.random.default_rng(1), num_samples=400, exact_threshold=0, sampler=sampler
    )
    assert result.method == "k-dpp" and result.num_samples == 400
    assert result.indices == tuple(planted)


def test_k_dpp_selection_is_reproducible():
    features = np.random.default_rng(5).uniform(size=(30, 6))
    a = select_partners(features, 4, rng=np.random.default_rng(9), num_samples=50, exact_threshold=0)
    b = select_partners(features, 4, rng=np.random.default_rng(9), num_samples=50, exact_threshold=0)
    assert a == b
    exact = select_partners(features, 4, rng=np.random.default_rng(0), num_samples=10**6)
    assert a.determinant <= exact.determinant + 1e-9  # sampling never beats the true maximum
    draws_a = sample_k_dpp(similarity_kernel(features), 4, 20, np.random.default_rng(1))
    draws_b = sample_k_dpp(similarity_kernel(features), 4, 20, np.random.default_rng(2))
    assert not np.array_equal(draws_a, draws_b)


@pytest.mark.parametrize(("sampler", "num_draws"), [("batched", 20_000), ("dppy", 3_000)])
def test_k_dpp_sampler_matches_exact_probabilities(sampler, num_draws):
    # k-DPP: P(S) = det(L_S) / sum_{|T|=k} det(L_T). Chi-square test over all 15 pairs of 6 items.
    kernel = similarity_kernel(np.random.default_rng(0).uniform(size=(6, 4)))
    subsets = list(itertools.combinations(range(6), 2))
    probs = np.array([br_div(kernel, s) for s in subsets])
    probs /= probs.sum()
    draws = sample_k_dpp(kernel, 2, num_draws, np.random.default_rng(3), sampler=sampler)
    index = {s: i for i, s in enumerate(subsets)}
    counts = np.bincount([index[tuple(d)] for d in draws], minlength=len(subsets))
    assert scipy.stats.chisquare(counts, probs * num_draws).pvalue > 1e-3
    uniform = np.full(len(subsets), num_draws / len(subsets))
    assert scipy.stats.chisquare(counts, uniform).pvalue < 1e-6  # and it is not uniform


def test_br_div_selection_beats_p_div_selection_on_br_diversity():
    # Partners 0-2 behave differently but all need the same BR; partners 3-5 behave alike but need
    # three different BRs. P-Div picks 0-2, BR-Div picks 3-5.
    rng = np.random.default_rng(0)
    eye = np.eye(3)
    alike = 0.5 + rng.uniform(0, 0.02, size=(3, 3))
    partner_features = np.concatenate([eye, alike])
    br_features = np.concatenate([0.3 + rng.uniform(0, 0.02, size=(3, 3)), eye])
    by_br = select_partners(br_features, 3, rng=np.random.default_rng(0))
    by_p = select_partners_p_div(partner_features, 3, rng=np.random.default_rng(0))
    assert by_br.indices == (3, 4, 5) and by_br.criterion == "BR-Div"
    assert by_p.indices == (0, 1, 2) and by_p.criterion == "P-Div"
    br_kernel = similarity_kernel(br_features)
    assert br_div(br_kernel, by_br.indices) > br_div(br_kernel, by_p.indices)


def test_k_larger_than_candidates_fails_before_compute(monkeypatch):
    def no_compute(*args, **kwargs):
        raise AssertionError("kernel computed before k was checked")

    monkeypatch.setattr(selection, "similarity_kernel", no_compute)
    with pytest.raises(ValueError, match=r"\[1, 4\]"):
        select_partners(np.ones((4, 3)), 5, rng=np.random.default_rng(0))


def test_rank_deficient_features_are_rejected():
    features = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # rank 2
    with pytest.raises(ValueError, match="rank 2"):
        select_partners(features, 3, rng=np.random.default_rng(0))


def test_selection_job_normalizes_the_features_once(tmp_path):
    # The third column is a rare event (counts ~0.002 per episode). Normalizing twice rescales it by
    # 1 / (0.003 / 0.004 + 1e-3) instead of 1, which changes the kernel and here the best subset.
    features = np.array(
        [[3, 2, 0.002], [1, 1, 0], [0, 0, 0], [3, 2, 0.003], [2, 2, 0.003], [2, 2, 0.002]], dtype=float
    )
    needs = {}
    for i, row in enumerate(features):
        job_dir = tmp_path / f"c{i}"
        job_dir.mkdir()
        result = {"final_return": 100.0, "features": row.tolist(), "feature_names": ["a", "b", "c"]}
        (job_dir / "DONE.json").write_text(json.dumps({"result": result}))
        needs[f"ring/candidates/c{i}/evaluate"] = str(job_dir)
    out = tmp_path / "select"
    out.mkdir()
    result = partners_select({"k": 3, "seed": 0, "num_samples": 1000}, out, needs)
    # the reference's kernel, by hand: columns over (max + 1e-3), L = F F^T; best of the C(6, 3) = 20 subsets
    f = features / (features.max(axis=0) + 1e-3)
    kernel = f @ f.T
    dets = {s: np.linalg.det(kernel[np.ix_(s, s)]) for s in itertools.combinations(range(6), 3)}
    best = max(dets, key=dets.get)
    assert result["selected_ids"] == [f"c{i}" for i in best]
    assert result["determinant"] == pytest.approx(dets[best], rel=1e-9)
    assert result["method"] == "exact"
