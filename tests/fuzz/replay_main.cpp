// The reader fuzzing without libFuzzer: replays a corpus (the regression cases in
// tests/fuzz/corpus) and runs seeded random mutants of valid files in every format.
//
//   fuzz_replay [--mutants N] [--seed S] [--save DIR] [FILE_OR_FOLDER...]
//
// A finding aborts the process (a hang of a minute too); its input is in $TMPDIR/ctdenoise-fuzz-last.

#include "fuzz/fuzz_target.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

namespace {

Bytes load(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One to four edits of the kinds that break readers: flipped bits, boundary values written over
// bytes and 32-bit words, digits of text headers changed, cuts, repeats and deletions.
Bytes mutate(Bytes b, std::mt19937_64& rng) {
  auto pick = [&](std::size_t n) { return n == 0 ? std::size_t(0) : std::size_t(rng() % n); };
  const int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits && b.size() > 1; ++e) {
    const std::size_t at = 1 + pick(b.size() - 1);  // byte 0 picks the format: kept
    switch (rng() % 8) {
      case 0: b[at] ^= std::uint8_t(1u << (rng() % 8)); break;
      case 1: {
        static const std::uint8_t values[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe};
        b[at] = values[pick(sizeof values)];
        break;
      }
      case 2: {
        static const std::uint32_t words[] = {0, 0xffffffffu, 0x7fffffffu, 0x80000000u, 0xffffu, 0x10000u, 65535 * 3};
        const std::uint32_t w = words[pick(sizeof words / sizeof words[0])];
        for (std::size_t k = 0; k < 4 && at + k < b.size(); ++k) b[at + k] = std::uint8_t(w >> (8 * k));
        break;
      }
      case 3: {  // a digit of a text header
        std::vector<std::size_t> digits;
        for (std::size_t i = 1; i < std::min<std::size_t>(b.size(), 2048); ++i) {
          if (b[i] >= '0' && b[i] <= '9') digits.push_back(i);
        }
        if (!digits.empty()) b[digits[pick(digits.size())]] = std::uint8_t("0123456789-9"[rng() % 12]);
        break;
      }
      case 4: b.resize(at); break;
      case 5: {
        const std::size_t len = 1 + pick(std::min<std::size_t>(64, b.size() - at));
        b.insert(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + len));
        break;
      }
      case 6: {
        const std::size_t len = 1 + pick(std::min<std::size_t>(64, b.size() - at));
        b.erase(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + len));
        break;
      }
      default: b[at] = std::uint8_t(rng()); break;
    }
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  long mutants = 0;
  std::uint64_t seed = 1;
  std::string save;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mutants" && i + 1 < argc) mutants = std::atol(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--save" && i + 1 < argc) save = argv[++i];
    else inputs.emplace_back(a);
  }
  const char* tmp = std::getenv("TMPDIR");
  const fs::path last = fs::path(tmp ? tmp : "/tmp") / "ctdenoise-fuzz-last";
  std::map<std::string, std::pair<long, long>> tally;  // format -> (read, refused)
  auto run = [&](const Bytes& input) {
    {
      std::ofstream(last, std::ios::binary).write(reinterpret_cast<const char*>(input.data()), std::streamsize(input.size()));
    }
    ::alarm(60);  // an input that takes a minute is a hang: SIGALRM ends the process
    const bool read = ctd::fuzz::run_one(input.data(), input.size());
    ::alarm(0);
    if (!input.empty()) (read ? tally[ctd::fuzz::format_name(input[0])].first : tally[ctd::fuzz::format_name(input[0])].second)++;
  };

  long replayed = 0;
  for (const fs::path& input : inputs) {
    std::vector<fs::path> files;
    if (fs::is_directory(input)) {
      for (const auto& entry : fs::directory_iterator(input)) {
        if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(input);
    }
    for (const fs::path& f : files) {
      run(load(f));
      ++replayed;
    }
  }
  if (mutants > 0) {
    const fs::path seeds = fs::path(tmp ? tmp : "/tmp") / "ctdenoise-fuzz-seeds";
    ctd::fuzz::write_seeds(seeds);
    std::vector<Bytes> pool;
    for (int s = 0; s < ctd::fuzz::format_count(); ++s) pool.push_back(load(seeds / ("seed-" + std::to_string(s))));
    fs::remove_all(seeds);
    for (std::size_t i = 0; i < pool.size() && !save.empty(); ++i) {  // libFuzzer starts from these
      fs::create_directories(save);
      std::ofstream(fs::path(save) / ("seed-" + std::to_string(i)), std::ios::binary)
          .write(reinterpret_cast<const char*>(pool[i].data()), std::streamsize(pool[i].size()));
    }
    for (const Bytes& b : pool) run(b);  // the seeds themselves must read
    for (const auto& [name, counts] : tally) {
      if (counts.second > 0) {
        std::fprintf(stderr, "fuzz: the valid %s seed was refused\n", name.c_str());
        return 1;
      }
    }
    std::mt19937_64 rng(seed);
    for (long m = 0; m < mutants; ++m) {
      const Bytes mutant = mutate(pool[std::size_t(m) % pool.size()], rng);
      run(mutant);
      if (!save.empty() && m % 97 == 0) {
        fs::create_directories(save);
        std::ofstream(fs::path(save) / ("mutant-" + std::to_string(m)), std::ios::binary)
            .write(reinterpret_cast<const char*>(mutant.data()), std::streamsize(mutant.size()));
      }
    }
  }
  long read = 0, refused = 0;
  for (const auto& [name, counts] : tally) {
    std::printf("%-18s %6ld read, %6ld refused\n", name.c_str(), counts.first, counts.second);
    read += counts.first;
    refused += counts.second;
  }
  std::printf("fuzz: %ld corpus files, %ld mutants (seed %llu): %ld read, %ld refused with a ctdenoise error, 0 findings\n",
              replayed, mutants, static_cast<unsigned long long>(seed), read, refused);
  std::error_code ignored;
  fs::remove(last, ignored);
  return 0;
}
