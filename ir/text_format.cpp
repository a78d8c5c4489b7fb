// PLACEHOLDER: being written.
#include "ir/text_format.h"
namespace fusor {
Graph parse_graph(std::string_view, const std::string&, const std::string&) { fail(ErrorCode::Unsupported, "text format not yet implemented"); }
Graph load_graph(const std::string&) { fail(ErrorCode::Unsupported, "text format not yet implemented"); }
std::string print_graph(const Graph&) { fail(ErrorCode::Unsupported, "text format not yet implemented"); }
}  // namespace fusor
