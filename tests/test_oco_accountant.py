"""P-COMW's Renyi accountant (dp_experts_env.privacy.accountant_oco): each fact it relies on,
checked against quadrature or brute force, and its certificate against the exact privacy profile
of a two-round game."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import agents
from agents._oco import ball_log_normaliser, box_log_normaliser
from dp_experts_env.privacy.accountant_oco import (
    ORDERS,
    lazy_round_rdp,
    pcomw_best_p,
    pcomw_calibrated,
    pcomw_rdp_account,
    randomized_response_rdp,
    rdp_to_dp,
)


# --------------------------------------------------------------------------- building blocks
def test_round_supremum_sits_on_a_vertex():
    # Brute force over a grid of feasible (q, q') pairs plus a fine walk along the feasible
    # polygon's edges never beats the vertex formula, and comes within 1e-4 of it.
    a = np.array([1.5, 3.0, 12.0, 200.0])
    log_m = (a - 1) * 0.02 * a
    for coin, lo, hi in [(0.05, 0.5, 0.9), (0.4, 0.6, 0.7), (0.01, 0.2, 0.95)]:
        got = lazy_round_rdp(a, coin, math.log(lo), math.log(hi), log_m)
        q = np.linspace(lo, hi, 401)
        qq, qp = (v.ravel() for v in np.meshgrid(q, q, indexing="ij"))
        keep = np.abs(np.log(qq / qp)) <= coin
        edge = np.linspace(lo, hi, 20001)
        qq = np.concatenate([qq[keep], edge, edge, edge, np.full(edge.size, lo)])
        qp = np.concatenate([qp[keep], np.clip(edge * math.exp(coin), lo, hi),
                             np.clip(edge * math.exp(-coin), lo, hi), np.full(edge.size, hi),
                             np.clip(edge, lo, lo * math.exp(coin))])  # fmt: skip
        feasible = np.abs(np.log(qq / qp)) <= coin + 1e-12
        qq, qp = qq[feasible], qp[feasible]
        for i, ai in enumerate(a):
            stay = ai * np.log(qq) + (1 - ai) * np.log(qp)
            move = ai * np.log1p(-qq) + (1 - ai) * np.log1p(-qp) + log_m[i]
            brute = np.logaddexp(stay, move).max() / (ai - 1)
            assert got[i] - 1e-4 * got[i] <= brute <= got[i] + 1e-12


def test_randomized_response_rdp_known_answers():
    eps = 0.7
    p = math.exp(eps) / (1 + math.exp(eps))
    for a in (2.0, 5.0):
        direct = math.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1)
        assert randomized_response_rdp(eps, np.array([a]))[0] == pytest.approx(direct)
    big = randomized_response_rdp(eps, np.array([1e6]))[0]
    assert eps - 1e-4 < big <= eps  # tends to the pure epsilon


def test_conversion_of_a_gaussian_is_valid_and_close():
    # (a, a mu^2 / 2)-RDP of the Gaussian mechanism: the conversion must not go below the exact
    # epsilon of mu-GDP at delta, and stays within 25% of it.
    mu, delta = 0.5, 1e-5
    eps, _ = rdp_to_dp(ORDERS * mu**2 / 2, delta)

    def gdp_delta(e):
        return stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2)

    lo, hi = 0.0, 20.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gdp_delta(mid) > delta else (lo, mid)
    assert hi <= eps <= 1.25 * hi


# --------------------------------------------------------------------------- the four facts
def _box_f(cum, beta, lam):
    return box_log_normaliser(np.asarray(cum, float), beta, lam, 1.0)


@pytest.mark.parametrize("body", ["box", "ball"])
def test_later_coins_differ_by_at_most_2_kappa(body):
    # Fact 3: the second difference of ln Z over (Delta, g) is at most (beta/lambda)|Delta||g|.
    rng = np.random.default_rng(0)
    d, beta, lam, big_g = 3, 0.8, 1.5, 1.0
    kappa = beta * big_g**2 / lam

    def f(c):
        if body == "box":
            return _box_f(c, beta, lam)
        return ball_log_normaliser(np.asarray(c, float), beta, lam, 1.0, d)

    worst = 0.0
    for _ in range(300):
        cum = rng.normal(0, 3, d)
        g = rng.normal(size=d)
        g *= big_g / np.linalg.norm(g)
        delta = rng.normal(size=d)
        delta *= 2 * big_g * rng.random() ** 0.2 / np.linalg.norm(delta)
        second = f(cum) - f(cum + g) - f(cum - delta) + f(cum - delta + g)
        worst = max(worst, abs(float(second)))
    assert 0.05 * kappa < worst <= 2 * kappa


def _tn_density(y, m, s):
    return stats.truncnorm.pdf(y, (-1 - m) / s, (1 - m) / s, loc=m, scale=s)


@pytest.mark.parametrize("mean", [0.0, 0.7, 3.0])
def test_fresh_sample_renyi_divergence_is_within_both_bounds(mean):
    # Fact 2 on the box [-1, 1] (d = 1, G = 1): D_a(mu_L || mu_{L - Delta}) by quadrature.
    beta, lam = 0.6, 2.0
    s = 1 / math.sqrt(beta * lam)
    kappa, w = beta / lam, 2 * beta * 2.0  # W = 2 beta G D with D = 2
    shift = 2.0 / lam  # |Delta| = 2G moves the mean by Delta / lambda
    for a in (2.0, 8.0, 40.0):

        def integrand(y, a=a):
            return _tn_density(y, mean, s) ** a * _tn_density(y, mean + shift, s) ** (1 - a)

        val, _ = integrate.quad(integrand, -1, 1)
        div = math.log(val) / (a - 1)
        bound = min(2 * a * kappa, randomized_response_rdp(w, np.array([a]))[0])
        assert 0 < div <= bound


def test_round_t0_log_ratio_is_at_most_twice_beta_g_d():
    # Fact 4: ln r(x)/r'(x) = -beta <Delta, x> + ln E_{mu_{L+g}} e^{beta <Delta, Y>} over the box.
    rng = np.random.default_rng(1)
    d, beta, lam = 2, 0.9, 1.0
    w = 2 * beta * 1.0 * 2 * math.sqrt(d)
    worst = 0.0
    for _ in range(200):
        cum = rng.normal(0, 5, d)
        g, gp = rng.normal(size=d), rng.normal(size=d)
        g, gp = g / np.linalg.norm(g), gp / np.linalg.norm(gp)
        x = rng.choice([-1.0, 1.0], d)
        ratio = -beta * (g - gp) @ x - _box_f(cum + g, beta, lam) + _box_f(cum + gp, beta, lam)
        worst = max(worst, abs(float(ratio)))
    assert 0.3 * w < worst <= w


# --------------------------------------------------------------------------- the certificate
def _two_round_profile(beta, lam, p, log_phi, n=801):
    """Exact output laws of P-COMW at T = 2 (d = 1, box [-1, 1], g_1 = +1 vs -1), discretised."""
    s = 1 / math.sqrt(beta * lam)
    xs = np.linspace(-1, 1, n)
    w = np.full(n, 2 / (n - 1))
    w[[0, -1]] /= 2

    def law(m):
        f = _tn_density(xs, m, s) * w
        return f / f.sum()

    f1, fa, fb = law(0.0), law(-1 / lam), law(1 / lam)
    out = []
    for g, f2 in ((1.0, fa), (-1.0, fb)):
        r = np.exp(-beta * g * xs) / np.sum(f1 * np.exp(-beta * g * xs))
        q = (1 - p) * np.clip(r / math.exp(log_phi), math.exp(-2 * log_phi), 1.0)
        out.append(np.concatenate([f1 * q, ((f1 * (1 - q))[:, None] * f2[None, :]).ravel()]))
    return out


def _exact_epsilon(pa, pb, delta):
    lo, hi = 0.0, 30.0
    for _ in range(60):
        mid = (lo + hi) / 2
        e = math.exp(mid)
        d = max(np.maximum(pa - e * pb, 0).sum(), np.maximum(pb - e * pa, 0).sum())
        lo, hi = (mid, hi) if d > delta else (lo, mid)
    return hi


@pytest.mark.parametrize(
    ("kappa", "p", "lam", "phi_factor"),
    [(0.13, 0.999, None, 1.0), (0.13, 0.5, None, 1 / 3), (0.05, 0.2, None, 1.0),
     (0.3, 0.3, 0.5, 1 / 3), (1.0, 0.5, None, 1.0)],
)  # fmt: skip
def test_certificate_covers_the_exact_two_round_profile(kappa, p, lam, phi_factor):
    t, delta = 2, 1e-5
    if lam is None:
        lam = 0.5 * math.sqrt(2 * t + 2 * math.log(t) / kappa)
    beta = kappa * lam
    bgd = 2 * beta
    pa, pb = _two_round_profile(beta, lam, p, bgd * phi_factor)
    exact = _exact_epsilon(pa, pb, delta)
    acc = pcomw_rdp_account(kappa, t, delta, p=p, log_phi=bgd * phi_factor, beta_gd=bgd)
    assert exact <= acc.epsilon <= 3 * exact  # valid, and not vacuous


# --------------------------------------------------------------------------- calibration
def test_calibration_spends_the_budget_and_grows_with_epsilon():
    kappas = []
    for eps in (0.5, 1.0, 4.0):
        kappa, p = pcomw_calibrated(1000, 3, eps, 1e-5)
        bgd = math.sqrt(2 * 1000 * kappa**2 + 2 * 3 * kappa * math.log(1000))
        spent = pcomw_rdp_account(kappa, 1000, 1e-5, p=p, log_phi=bgd, beta_gd=bgd).epsilon
        assert 0.99 * eps <= spent <= eps
        assert pcomw_best_p(kappa, 1000, 3, 1e-5) == pytest.approx(p)
        kappas.append(kappa)
    assert kappas[0] < kappas[1] < kappas[2]


def test_calibrated_learner_claims_its_certificate():
    agent = agents.make("p-comw", dim=3, horizon=500, epsilon=1.0)
    prm = agent.parameters
    acc = pcomw_rdp_account(prm.kappa, 500, 1e-5, p=prm.p, log_phi=prm.log_phi,
                            beta_gd=prm.beta * 1.0 * agent.diameter)  # fmt: skip
    assert prm.clip_free and prm.log_phi == pytest.approx(prm.beta * agent.diameter)
    assert agent.privacy.epsilon == acc.epsilon <= 1.0 and agent.privacy.delta == 1e-5
    assert "Renyi" in agent.privacy.accountant and agent.privacy.certified


@pytest.mark.parametrize(("name", "value", "match"), [
    ("kappa", 0.0, "kappa"), ("p", 1.0, "p"), ("delta", 0.0, "delta"), ("beta_gd", -1.0, "beta_gd"),
])  # fmt: skip
def test_bad_inputs_raise(name, value, match):
    kw = {"p": 0.1, "log_phi": 0.1, "beta_gd": 0.1}
    args = {"kappa": 1e-3, "delta": 1e-5}
    (args if name in args else kw)[name] = value
    with pytest.raises(ValueError, match=match):
        pcomw_rdp_account(args["kappa"], 100, args["delta"], **kw)
