// What a tile of the automatic parameters' sample reads of its noise: its flat part, the
// pseudo-residual sigma there and that sigma's chance scatter, and its second differences
// (src/core/tile_reads.cpp; used by sample_levels.cpp, auto_sample.cpp, scan_map.cpp, scan_probe.cpp and auto_params.cpp).
#pragma once

#include <ctdenoise/noise.hpp>
#include <ctdenoise/volume.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace ctd::detail {

// An axis of n voxels cut into n / size pieces (at least one), the remainder spread over them:
// the pieces' bounds, n / size + 1 of them.
std::vector<std::int64_t> even_cuts(std::int64_t n, std::int64_t size);

// The padding value the tile readers below leave out: the model's, none where it has none (NaN).
std::vector<float> padding_of(const NoiseModel& noise);

// Sets the tile's padding and busy areas to NaN, so that what is read in it is noise, not anatomy
// (tile_reads.cpp says how an area is judged busy).
void keep_flat_part(Volume& tile, const std::vector<float>& padding);

// A tile's pseudo-residual estimate, padding and NaN left out; nullopt where too few voxels are
// usable. And whether an estimate read on `voxels` voxels is a tile's level: from a quarter of
// them at least.
std::optional<NoiseEstimate> residual_estimate(ConstVolumeView<float> tile, const std::vector<float>& padding);
bool reads_a_tile(const std::optional<NoiseEstimate>& e, std::int64_t voxels);

// A tile's pseudo-residual sigma, `padding` left out (0 where under a quarter of its voxels give
// a residual), and that of its flat part (its busy 8 x 8 areas left out, as measure_level reads
// it).
double tile_residual_sigma(ConstVolumeView<float> tile, const std::vector<float>& padding);
double flat_residual_sigma(Volume tile, const std::vector<float>& padding);
// An estimate of the variance of log(pseudo-residual sigma) of a tile's flat part (NaN outside it)
// that chance alone makes: from the squared difference of the logs read on the two halves of its
// 8 x 8 areas (a checkerboard), scaled by the residuals each was read from. NaN where a half
// gives too few residuals. Unbiased for the variance, though one tile's is a rough estimate:
// scan_map sums it over the tiles.
double flat_level_scatter(const Volume& flat, const std::vector<float>& padding);
// A tile's flat part read two ways: its pseudo-residual sigma, and the robust sigma of its in-plane
// second differences two voxels apart, u(p - 2) - 2 u(p) + u(p + 2) along x and y (0 where too few
// voxels are usable). The second reads the noise's variance nearly whatever its texture; their
// ratio reads the texture (finer noise: a higher pseudo-residual sigma for the same variance).
struct FlatReading {
  double residual_sigma = 0, second_difference_sigma = 0;
};
FlatReading read_flat_part(Volume tile, const std::vector<float>& padding);

// Low-contrast structure in a slice of a block: the number of places whose 3 x 3 box mean
// differs from the box 3 voxels along x (or y) by 1.4-8 x the slice's own noise sigma (its
// pseudo-residual sigma over `gain`, the model's in-plane pseudo_residual_gain); 0 where no sigma
// is read. What make_sample orders the filter's candidate blocks by.
std::int64_t low_contrast_structure(ConstVolumeView<float> slice, const std::vector<float>& padding, double gain);

}  // namespace ctd::detail
