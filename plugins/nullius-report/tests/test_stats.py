"""The statistics against worked values, each with its source."""

import math

import pytest

from nullius_report import stats


def test_student_t_quantiles_match_the_printed_table():
    # Student's t table (any statistics textbook, e.g. Moore & McCabe, Table D): t*(0.975) for df 2, 9, 30
    assert stats.t_quantile(0.975, 2) == pytest.approx(4.302653, abs=1e-5)
    assert stats.t_quantile(0.975, 9) == pytest.approx(2.262157, abs=1e-5)
    assert stats.t_quantile(0.975, 30) == pytest.approx(2.042272, abs=1e-5)


def test_paired_difference_ci_is_students_sleep_data():
    # Student (1908) / Cushny & Peebles: R's `sleep` data; `t.test(extra ~ group, data = sleep, paired = TRUE)`
    # gives mean difference -1.58 and 95% CI [-2.4598858, -0.7001142] (R's own ?t.test example)
    group1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
    group2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
    a = {f"p{i}": [x] for i, x in enumerate(group1)}
    b = {f"p{i}": [x] for i, x in enumerate(group2)}
    result = stats.paired(a, b)
    assert result.mean_difference == pytest.approx(-1.58)
    assert result.ci95 == pytest.approx((-2.4598858, -0.7001142), abs=1e-6)
    assert (result.wins, result.losses, result.ties) == (0, 9, 1)  # patient 5: -0.1 both times


def test_mcnemar_exact_is_the_binomial_on_discordant_pairs():
    # scipy.stats.binomtest(2, 12, 0.5).pvalue == 0.03857421875, computed once by hand: 2 * (1 + 12 + 66) / 4096
    assert stats.mcnemar_exact(2, 10) == pytest.approx(0.03857421875, abs=1e-12)
    assert stats.mcnemar_exact(10, 2) == pytest.approx(0.03857421875, abs=1e-12)
    assert stats.mcnemar_exact(0, 5) == pytest.approx(0.0625)  # 2 / 32
    assert stats.mcnemar_exact(1, 2) == 1.0 and stats.mcnemar_exact(0, 0) == 1.0


def test_clustered_standard_error_by_hand():
    # CR1 for a mean, by hand: clusters [1,0], [1,1], [0,0]; N = 6, mean 0.5; residual sums 0, +1, -1;
    # sqrt(3/2 * (0 + 1 + 1)) / 6 = sqrt(3) / 6
    assert stats.clustered_se([[1, 0], [1, 1], [0, 0]]) == pytest.approx(math.sqrt(3) / 6)
    # one observation a cluster: CR1 reduces to the usual s / sqrt(n)
    values = [1.0, 0.0, 1.0, 1.0]
    assert stats.clustered_se([[v] for v in values]) == pytest.approx(stats.sample_std(values) / 2)


def test_sample_std_uses_n_minus_one():
    assert stats.sample_std([1.0, 2.0, 3.0, 4.0]) == pytest.approx(math.sqrt(5 / 3))
    assert stats.sample_std([1.0]) is None
