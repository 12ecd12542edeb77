#pragma once
// Everything of the ctdenoise library (filters; I/O lives in <ctdenoise/io.hpp>).
#include <ctdenoise/bilateral.hpp>
#include <ctdenoise/error.hpp>
#include <ctdenoise/exec.hpp>
#include <ctdenoise/metrics.hpp>
#include <ctdenoise/nlm.hpp>
#include <ctdenoise/noise.hpp>
#include <ctdenoise/volume.hpp>
