#include "reference.hpp"

#include <algorithm>
#include <cmath>

namespace ref {

int reflect(int i, int n) {
  if (n == 1) return 0;
  while (i < 0 || i >= n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
  }
  return i;
}

namespace {

double at(const Image& im, int x, int y, int z) {
  return im.values[(static_cast<std::size_t>(reflect(z, im.nz)) * im.ny + reflect(y, im.ny)) * im.nx +
                   reflect(x, im.nx)];
}

}  // namespace

std::vector<double> nlm(const Image& in, const NlmSettings& s) {
  const bool flat = in.nz == 1;
  const int dim = flat ? 2 : 3;
  const int rp = s.patch_radius, rpz = flat ? 0 : rp, rs = s.search_radius, rsz = flat ? 0 : rs;
  const double patch_volume = std::pow(2.0 * rp + 1, dim);

  std::vector<double> out(in.values.size());
  for (int z = 0; z < in.nz; ++z)
    for (int y = 0; y < in.ny; ++y)
      for (int x = 0; x < in.nx; ++x) {
        double sum = 0, weight_sum = 0, max_weight = 0;
        for (int qz = z - rsz; qz <= z + rsz; ++qz)
          for (int qy = y - rs; qy <= y + rs; ++qy)
            for (int qx = x - rs; qx <= x + rs; ++qx) {
              if (qx < 0 || qy < 0 || qz < 0 || qx >= in.nx || qy >= in.ny || qz >= in.nz) continue;
              const bool centre = qx == x && qy == y && qz == z;
              if (centre && s.centre_max) continue;
              double distance = 0, kernel_sum = 0;
              for (int kz = -rpz; kz <= rpz; ++kz)
                for (int ky = -rp; ky <= rp; ++ky)
                  for (int kx = -rp; kx <= rp; ++kx) {
                    const double a = at(in, x + kx, y + ky, z + kz), b = at(in, qx + kx, qy + ky, qz + kz);
                    const double r2 = double(kx) * kx + double(ky) * ky + double(kz) * kz;
                    double g;
                    if (s.l1) {
                      g = r2 == 0 ? std::sqrt(2.0) : 1.0 / std::sqrt(r2);
                      distance += g * std::fabs(a - b);
                    } else {
                      g = s.gaussian_patch ? std::exp(-r2 / (2 * s.patch_sigma * s.patch_sigma)) : 1.0;
                      distance += g * (a - b) * (a - b);
                    }
                    kernel_sum += g;
                  }
              const double w =
                  s.l1 ? std::exp(-distance / (s.h * patch_volume))
                       : std::exp(-std::max(distance / kernel_sum - 2 * s.noise_sigma * s.noise_sigma, 0.0) /
                                  (s.h * s.h));
              const double u = in.values[(static_cast<std::size_t>(qz) * in.ny + qy) * in.nx + qx];
              sum += w * u;
              weight_sum += w;
              max_weight = std::max(max_weight, w);
            }
        const double u = in.values[(static_cast<std::size_t>(z) * in.ny + y) * in.nx + x];
        if (s.centre_max) {
          const double wc = max_weight > 0 ? max_weight : 1.0;
          sum += wc * u;
          weight_sum += wc;
        }
        out[(static_cast<std::size_t>(z) * in.ny + y) * in.nx + x] = sum / weight_sum;
      }
  return out;
}

double ssim(const Image& a, const Image& b, double data_range) {
  const bool flat = a.nz == 1;
  double g[11], total = 0;
  for (int k = -5; k <= 5; ++k) total += g[k + 5] = std::exp(-k * k / 4.5);
  for (double& v : g) v /= total;
  const double c1 = std::pow(0.01 * data_range, 2), c2 = std::pow(0.03 * data_range, 2);
  double sum = 0;
  for (int z = 0; z < a.nz; ++z)
    for (int y = 0; y < a.ny; ++y)
      for (int x = 0; x < a.nx; ++x) {
        double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
        for (int kz = flat ? 0 : -5; kz <= (flat ? 0 : 5); ++kz)
          for (int ky = -5; ky <= 5; ++ky)
            for (int kx = -5; kx <= 5; ++kx) {
              const double w = g[kx + 5] * g[ky + 5] * (flat ? 1.0 : g[kz + 5]);
              const double va = at(a, x + kx, y + ky, z + kz), vb = at(b, x + kx, y + ky, z + kz);
              mx += w * va;
              my += w * vb;
              sxx += w * va * va;
              syy += w * vb * vb;
              sxy += w * va * vb;
            }
        const double vx = sxx - mx * mx, vy = syy - my * my, cov = sxy - mx * my;
        sum += ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2));
      }
  return sum / (double(a.nx) * a.ny * a.nz);
}

std::vector<double> bilateral(const Image& in, const BilateralSettings& s) {
  std::array<int, 3> r{};
  for (int a = 0; a < 3; ++a) {
    r[a] = s.radius[a] >= 0 ? s.radius[a] : std::max(1, static_cast<int>(std::ceil(3 * s.sigma_spatial / s.step[a] - 1e-9)));
  }
  if (in.nz == 1) r[2] = 0;

  std::vector<double> out(in.values.size());
  for (int z = 0; z < in.nz; ++z)
    for (int y = 0; y < in.ny; ++y)
      for (int x = 0; x < in.nx; ++x) {
        const double centre = at(in, x, y, z);
        double sum = 0, weight_sum = 0;
        for (int kz = -r[2]; kz <= r[2]; ++kz)
          for (int ky = -r[1]; ky <= r[1]; ++ky)
            for (int kx = -r[0]; kx <= r[0]; ++kx) {
              const double v = at(in, x + kx, y + ky, z + kz);
              const double dx = kx * s.step[0], dy = ky * s.step[1], dz = kz * s.step[2];
              const double w = std::exp(-(dx * dx + dy * dy + dz * dz) / (2 * s.sigma_spatial * s.sigma_spatial)) *
                               std::exp(-(centre - v) * (centre - v) / (2 * s.sigma_range * s.sigma_range));
              sum += w * v;
              weight_sum += w;
            }
        out[(static_cast<std::size_t>(z) * in.ny + y) * in.nx + x] = sum / weight_sum;
      }
  return out;
}

}  // namespace ref
