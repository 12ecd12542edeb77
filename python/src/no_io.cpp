// ctdenoise._core built without ITK (CTD_BUILD_IO=OFF): the filters only; the Python layer's read
// and write say so.

#include "bindings.hpp"

namespace ctdpy {

void bind_io(nb::module_& m) { m.attr("has_io") = false; }

}  // namespace ctdpy
