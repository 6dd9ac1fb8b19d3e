// Plugin ABI entries of the layer group (see entries.hpp). None implemented yet:
// the entries stay NULL and the core reports them UNSUPPORTED.
#include "entries.hpp"

namespace octet_cuda {

void add_layer_entries(octet_backend_api&) {}

}  // namespace octet_cuda
