// Shape lists for `fusor warmup` (see Note [Warmup shape lists] in shape_list.h).
#include "tools/fusor/shape_list.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "ir/error.h"
#include "tools/fusor/cli.h"

namespace fusor::cli {

namespace {

std::optional<int64_t> parse_size(std::string_view s) {
  int64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::vector<DimValues> parse_dim_specs(const std::vector<std::string>& specs) {
  std::vector<DimValues> dims;
  std::vector<std::set<int64_t>> seen;
  for (const std::string& spec : specs) {
    auto [name, list] = split_assignment(spec, "--dim");
    auto it = std::find_if(dims.begin(), dims.end(), [&name = name](const DimValues& d) { return d.first == name; });
    if (it == dims.end()) {
      dims.push_back({name, {}});
      seen.emplace_back();
      it = dims.end() - 1;
    }
    std::set<int64_t>& have = seen[size_t(it - dims.begin())];
    std::stringstream items(list);
    std::string item;
    bool any = false;
    while (std::getline(items, item, ',')) {
      any = true;
      const std::string what = "--dim " + name + "=" + list;
      size_t dots = item.find("..");
      int64_t lo = 0, hi = 0;
      if (dots == std::string::npos) {
        auto v = parse_size(item);
        if (!v) throw UsageError{what + ": '" + item + "' is not a size (want SIZE, LO..HI or a comma list of them)"};
        lo = hi = *v;
      } else {
        auto a = parse_size(std::string_view(item).substr(0, dots));
        auto b = parse_size(std::string_view(item).substr(dots + 2));
        if (!a || !b) throw UsageError{what + ": '" + item + "' is not a range (want LO..HI, e.g. 1..512)"};
        lo = *a;
        hi = *b;
        if (lo > hi) throw UsageError{what + ": the range " + item + " is empty (LO > HI); write " +
                                      std::to_string(hi) + ".." + std::to_string(lo)};
      }
      if (lo < 0) throw UsageError{what + ": sizes must be >= 0"};
      if (uint64_t(hi - lo) >= kMaxWarmShapes)
        throw UsageError{what + ": " + item + " is more than " + std::to_string(kMaxWarmShapes) + " sizes"};
      for (int64_t v = lo;; ++v) {  // (v == hi ends it: ++v past INT64_MAX would overflow)
        if (have.insert(v).second) it->second.push_back(v);
        if (v == hi) break;
      }
    }
    if (!any || list.back() == ',') throw UsageError{"--dim " + name + "=" + list + ": an empty item in the list"};
  }
  uint64_t total = 1;
  for (const DimValues& d : dims) {
    total *= d.second.size();
    if (total > kMaxWarmShapes)
      throw UsageError{"the --dim values make more than " + std::to_string(kMaxWarmShapes) +
                       " shapes; narrow the ranges"};
  }
  return dims;
}

std::vector<WarmShape> cartesian_shapes(const std::vector<DimValues>& dims) {
  std::vector<WarmShape> shapes;
  if (dims.empty()) return shapes;
  std::vector<size_t> index(dims.size(), 0);
  for (;;) {
    WarmShape s;
    for (size_t d = 0; d < dims.size(); ++d) s.dims[dims[d].first] = dims[d].second[index[d]];
    shapes.push_back(std::move(s));
    // Advance like an odometer: the last dim fastest.
    size_t d = dims.size();
    while (d > 0) {
      --d;
      if (++index[d] < dims[d].second.size()) break;
      index[d] = 0;
      if (d == 0) return shapes;
    }
  }
}

std::vector<WarmShape> read_shape_histogram(const std::string& path, const DimBindings& defaults) {
  std::ifstream in(path);
  FUSOR_CHECK(in, Io, "--shapes ", path, ": cannot read the file");
  std::vector<WarmShape> shapes;
  std::map<DimBindings, size_t> index;  // shape -> its position in `shapes`
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(lineno);
    std::istringstream words(line);
    std::string word;
    words >> word;
    auto count = parse_size(word);
    FUSOR_CHECK(count && *count > 0, ParseError, where, ": a line starts with a positive count, got '", word,
                "' (want COUNT NAME=SIZE..., e.g. 120 B=1 T=64)");
    WarmShape s;
    s.count = uint64_t(*count);
    s.where = where;
    while (words >> word) {
      auto eq = word.find('=');
      auto size = eq == std::string::npos ? std::nullopt : parse_size(std::string_view(word).substr(eq + 1));
      FUSOR_CHECK(eq != std::string::npos && eq > 0 && size && *size >= 0, ParseError, where, ": '", word,
                  "' is not NAME=SIZE (a name, '=', a size >= 0)");
      std::string name = word.substr(0, eq);
      FUSOR_CHECK(!s.dims.count(name), ParseError, where, ": dim ", name, " is given twice");
      s.dims[name] = *size;
    }
    FUSOR_CHECK(!s.dims.empty(), ParseError, where, ": the count ", *count,
                " is followed by no NAME=SIZE (want e.g. 120 B=1 T=64)");
    for (const auto& [name, size] : defaults) s.dims.emplace(name, size);  // a line's own size wins
    if (auto it = index.find(s.dims); it != index.end()) {
      shapes[it->second].count += s.count;
    } else {
      index.emplace(s.dims, shapes.size());
      shapes.push_back(std::move(s));
    }
    FUSOR_CHECK(shapes.size() <= kMaxWarmShapes, InvalidArgument, where, ": more than ", kMaxWarmShapes, " shapes");
  }
  FUSOR_CHECK(!in.bad(), Io, "--shapes ", path, ": reading failed");
  FUSOR_CHECK(!shapes.empty(), InvalidArgument, "--shapes ", path,
              ": the file holds no shape (want one line per shape: COUNT NAME=SIZE..., e.g. 120 B=1 T=64)");
  std::stable_sort(shapes.begin(), shapes.end(), [](const WarmShape& a, const WarmShape& b) { return a.count > b.count; });
  return shapes;
}

std::string shape_label(const WarmShape& s, const std::vector<std::string>& names) {
  std::string out;
  for (const auto& [name, size] : s.dims) {
    if (!names.empty() && std::find(names.begin(), names.end(), name) == names.end()) continue;
    out += (out.empty() ? "" : " ") + name + "=" + std::to_string(size);
  }
  return out;
}

std::vector<std::string> varying_dims(const std::vector<WarmShape>& shapes) {
  std::vector<std::string> names;
  if (shapes.empty()) return names;
  std::set<std::string> all;
  for (const WarmShape& s : shapes)
    for (const auto& kv : s.dims) all.insert(kv.first);
  for (const std::string& name : all) {
    std::optional<int64_t> first;
    bool varies = false;
    for (const WarmShape& s : shapes) {
      auto it = s.dims.find(name);
      std::optional<int64_t> v = it == s.dims.end() ? std::nullopt : std::optional<int64_t>(it->second);
      if (&s == &shapes.front()) first = v;
      else if (v != first) varies = true;
      if (varies) break;
    }
    if (varies || shapes.size() == 1) names.push_back(name);
  }
  return names;
}

}  // namespace fusor::cli
