// validate_params --truth-score (truth_score.hpp).

#include "truth_score.hpp"

#include "core/ssim_window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace validation {
namespace {

using i64 = std::int64_t;

// --truth-score: the error against the truth where the reference r = t + e keeps noise e of its
// own, which every value that also removes it is charged for against r. For Gaussian e of
// covariance C_e, Stein's lemma gives E[f_i e_j] = (J C_e)_ij (J the filter's Jacobian at the
// noisy input y), so E|f - t|^2 = E|f - r|^2 + 2 tr(C_e J) - tr(C_e). C_e is the noise model of
// the reference; J C_e is read by Monte Carlo with one probe b of that model (none in the
// reference's padding, which is not counted), as D b^T with D = (f(y + eps b) - f(y)) / eps, as
// the automatic parameters estimate their own risk. SSIM against t window by window: t's
// variance is r's less e's own (b's), and f's covariance with t is that with r less the window's
// covariance of D and b; the means' term stays r's (less e's mean square, a window whose mean is
// near 0 could get a denominator at or below 0). bench/own_noise_score_check.py checks both on
// phantoms whose truth is known: with e's exact covariance the SSIM within 0.005 of the truth's.
struct TruthScores {
  double mse = 0, corrected_mse = 0, ssim = 0, corrected_ssim = 0;
};
class TruthScorer {
 public:
  static constexpr double kEps = 0.02;
  TruthScorer(const ctd::Volume& reference, const ctd::Volume& noisy, const ctd::NoiseModel& own, double data_range)
      : data_range_(data_range), dims_(noisy.dims()), n_(std::size_t(noisy.size())), counted_(n_), reference_(n_),
        probe_(n_), perturbed_(noisy) {
    // The reference's padding (a scan's outside of its field of view) holds no noise: no probe
    // there, and not counted.
    for (std::size_t i = 0; i < n_; ++i) {
      counted_[i] = double(reference.data()[i]) != own.excluded_value;
      n_counted_ += counted_[i];
      reference_[i] = reference.data()[i];
    }
    const ctd::Volume probe = ctd::synthesize_noise(own, dims_, 0x7157, &counted_);
    std::vector<double> rr(n_), bb(n_);
    for (std::size_t i = 0; i < n_; ++i) {
      probe_[i] = probe.data()[i];
      perturbed_.data()[i] += float(kEps * probe_[i]);
      rr[i] = reference_[i] * reference_[i];
      bb[i] = probe_[i] * probe_[i];
    }
    trace_ = own.sigma * own.sigma;
    using ctd::detail::ssim_window_mean;
    mean_r_ = ssim_window_mean(reference_, dims_), mean_rr_ = ssim_window_mean(rr, dims_);
    mean_b_ = ssim_window_mean(probe_, dims_), mean_bb_ = ssim_window_mean(bb, dims_);
  }
  // The input plus eps times the probe: `score`'s `f_perturbed` is the filter's output of it.
  const ctd::Volume& perturbed() const { return perturbed_; }

  TruthScores score(const ctd::Volume& f, const ctd::Volume& f_perturbed) const {
    std::vector<double> fd(n_), ff(n_), fr(n_), response(n_), response_b(n_);
    double squares = 0, divergence = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      fd[i] = f.data()[i];
      ff[i] = fd[i] * fd[i];
      fr[i] = fd[i] * reference_[i];
      response[i] = (double(f_perturbed.data()[i]) - fd[i]) / kEps;
      response_b[i] = response[i] * probe_[i];
      if (!counted_[i]) continue;
      squares += (fd[i] - reference_[i]) * (fd[i] - reference_[i]);
      divergence += response_b[i];
    }
    using ctd::detail::ssim_window_mean;
    const auto mf = ssim_window_mean(fd, dims_), mff = ssim_window_mean(ff, dims_), mfr = ssim_window_mean(fr, dims_),
               md = ssim_window_mean(response, dims_), mdb = ssim_window_mean(response_b, dims_);
    const double c1 = std::pow(0.01 * data_range_, 2), c2 = std::pow(0.03 * data_range_, 2), n = double(n_counted_);
    double ssim = 0, corrected = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      if (!counted_[i]) continue;
      const double mr = mean_r_[i], mb = mean_b_[i], var_f = mff[i] - mf[i] * mf[i], var_r = mean_rr_[i] - mr * mr,
                   cov = mfr[i] - mf[i] * mr;
      ssim += ctd::detail::ssim_from_moments(mf[i] * mr, mf[i] * mf[i], mr * mr, var_f, var_r, cov, c1, c2);
      corrected += ctd::detail::ssim_from_moments(mf[i] * mr, mf[i] * mf[i], mr * mr, var_f, var_r - (mean_bb_[i] - mb * mb),
                                                  cov - (mdb[i] - md[i] * mb), c1, c2);
    }
    return {squares / n, squares / n + 2 * divergence / n - trace_, ssim / n, corrected / n};
  }

 private:
  double data_range_;
  ctd::Dims dims_;
  std::size_t n_;
  std::vector<unsigned char> counted_;
  i64 n_counted_ = 0;
  std::vector<double> reference_, probe_, mean_r_, mean_rr_, mean_b_, mean_bb_;
  ctd::Volume perturbed_;
  double trace_ = 0;
};

}  // namespace

bool print_truth_score(const std::string& name, double automatic, const ctd::Volume& reference, const ctd::Volume& noisy,
                       const ctd::NoiseModel& own, const std::function<ctd::Volume(const ctd::Volume&, double)>& filter,
                       double data_range, double gap_limit) {
  const TruthScorer scorer(reference, noisy, own, data_range);
  std::map<int, TruthScores> scores;
  for (int k = -8; k <= 8; ++k) {
    const double v = automatic * std::exp2(k / 4.0);
    scores[k] = scorer.score(filter(noisy, v), filter(scorer.perturbed(), v));
  }
  const TruthScores at_noisy = scorer.score(noisy, scorer.perturbed()), at_auto = scores[0];
  auto least = [&](double TruthScores::*mse) {
    return std::min_element(scores.begin(), scores.end(), [&](auto& a, auto& b) { return a.second.*mse < b.second.*mse; })->first;
  };
  const int by_reference = least(&TruthScores::mse), corrected = least(&TruthScores::corrected_mse);
  const TruthScores& at_corrected = scores[corrected];
  const double gap = at_corrected.corrected_mse > 0 ? 10 * std::log10(at_auto.corrected_mse / at_corrected.corrected_mse)
                                                   : std::nan("");
  const double ssim_under = at_corrected.corrected_ssim - at_auto.corrected_ssim;
  const double over_noisy_db = 10 * std::log10(at_noisy.corrected_mse / at_auto.corrected_mse),
               over_noisy_ssim = at_auto.corrected_ssim - at_noisy.corrected_ssim;
  fmt::print("TRUTH {}: auto {:.2f} own noise {:.2f} | least against the reference {:.2f} gap {:.2f} dB SSIM under {:.4f} | "
             "least corrected {:.2f} gap {:.2f} dB SSIM under {:.4f} | over the noisy input corrected {:.2f} dB SSIM {:.4f}\n",
             name, automatic, own.sigma, automatic * std::exp2(by_reference / 4.0),
             10 * std::log10(at_auto.mse / scores[by_reference].mse), scores[by_reference].ssim - at_auto.ssim,
             automatic * std::exp2(corrected / 4.0), gap, ssim_under, over_noisy_db, over_noisy_ssim);
  std::fflush(stdout);
  return gap <= gap_limit && ssim_under <= 0.005 && over_noisy_db >= 0 && over_noisy_ssim >= 0;
}

}  // namespace validation
