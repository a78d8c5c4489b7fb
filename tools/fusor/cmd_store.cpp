// `fusor store stats|ls|verify|prune`: what the persistent kernel stores hold, the local
// disk store and the remote one a fleet shares, checked and cleaned without loading a kernel.
#include <map>
#include <string>
#include <vector>

#include "cache/disk_store.h"
#include "cache/redis_store.h"
#include "cache/version.h"
#include "ir/error.h"
#include "tools/fusor/cli.h"
#include "tools/fusor/commands.h"

namespace fusor::cli {

namespace {

const std::string kStoreUsageText = std::string(
    "usage: fusor store stats|ls|verify|prune [options]\n"
    "\n"
    "The persistent kernel stores: the local disk store and, with --remote, the Redis store\n"
    "a fleet shares (entries signed with HMAC-SHA256, README \"A store for a fleet\").\n"
    "  stats    where each store is, how many entries and bytes it holds (the remote one:\n"
    "           every engine version's names under the namespace, and this version's)\n"
    "  ls       every entry: the disk store's by key hash, the remote store's by name\n"
    "  verify   read and check every entry without loading it: format, engine version,\n"
    "           checksum, and in the remote store the tag under the key; exit 3 if any is\n"
    "           not valid\n"
    "  prune    remove every entry that is not valid for this fusor (stale versions,\n"
    "           corrupt, unsigned or forged ones); --all removes every entry, --max-bytes N\n"
    "           trims the disk store to N bytes, least recently used first\n"
    "\n"
    "options:\n"
    "  --cache-dir DIR      the disk store (default: $FUSOR_CACHE_DIR, else ~/.cache/fusor)\n"
    "  --no-disk-cache      leave the disk store out\n") +
    kRemoteHelp +
    "  --all                prune: remove every entry, valid or not\n"
    "  --max-bytes N        prune: trim the disk store to N bytes\n"
    "  --json               print one JSON object\n"
    "  --help               this text\n";

std::string u(uint64_t v) { return std::to_string(v); }

// A disk entry's name: its key hash as 16 hex digits.
std::string hex_hash(uint64_t h) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(h));
  return hash;
}

// Lines listing entries, as text ("  <line>\n" each) and as the items of a JSON array.
struct Listing {
  std::string text, json;
  void add(const std::string& line, const std::string& object) {
    text += "  " + line + "\n";
    json += (json.empty() ? "" : ", ") + object;
  }
};

struct Report {
  std::string json;  // one object
  std::string text;
  bool all_valid = true;
};

// Counts of entries by kind, as "3 valid, 1 stale" and as a JSON object.
struct KindCounts {
  std::map<std::string, uint64_t> n;
  std::string text() const {
    std::string s;
    for (const auto& [k, c] : n) s += (s.empty() ? "" : ", ") + u(c) + " " + k;
    return s.empty() ? "no entries" : s;
  }
  std::string json() const {
    std::string s;
    for (const auto& [k, c] : n) s += (s.empty() ? "" : ", ") + json_string(k) + ": " + u(c);
    return "{" + s + "}";
  }
};

Report disk_report(const std::string& action, DiskStore& disk, const Args& args) {
  Report r;
  const std::string dir = json_string(disk.dir());
  if (!disk.enabled()) {
    r.text = "disk store " + disk.dir() + ": not usable (" + disk.reason_disabled() + ")\n";
    r.json = "{\"dir\": " + dir + ", \"enabled\": false, \"reason\": " + json_string(disk.reason_disabled()) + "}";
    r.all_valid = action != "verify";
    return r;
  }
  if (action == "stats" || action == "ls") {
    uint64_t bytes = 0;
    const std::vector<DiskStore::Entry> entries = disk.entries();
    Listing list;
    for (const DiskStore::Entry& e : entries) {
      bytes += e.bytes;
      list.add(hex_hash(e.key_hash) + "  " + u(e.bytes),
               "{\"hash\": \"" + hex_hash(e.key_hash) + "\", \"bytes\": " + u(e.bytes) + "}");
    }
    r.text = "disk store " + disk.dir() + ": " + u(entries.size()) + " entries, " + u(bytes) + " bytes\n" +
             (action == "ls" ? list.text : "");
    r.json = "{\"dir\": " + dir + ", \"enabled\": true, \"entries\": " + u(entries.size()) + ", \"bytes\": " + u(bytes) +
             (action == "ls" ? ", \"list\": [" + list.json + "]" : "") + "}";
    return r;
  }
  const bool prune = action == "prune";
  if (prune && args.has("--all")) {
    uint64_t removed = disk.trim(0);
    r.text = "disk store " + disk.dir() + ": removed all " + u(removed) + " entries\n";
    r.json = "{\"dir\": " + dir + ", \"removed\": " + u(removed) + "}";
    return r;
  }
  KindCounts counts;
  Listing bad;
  for (const DiskStore::Checked& c : disk.check_all(prune)) {
    ++counts.n[c.kind];
    if (c.kind == "valid") continue;
    r.all_valid = false;
    bad.add(hex_hash(c.key_hash) + "  " + c.kind + ": " + c.detail + (prune ? " (removed)" : ""),
            "{\"hash\": \"" + hex_hash(c.key_hash) + "\", \"kind\": " + json_string(c.kind) + ", \"detail\": " +
                json_string(c.detail) + "}");
  }
  uint64_t trimmed = 0;
  if (prune && args.has("--max-bytes"))
    trimmed = disk.trim(uint64_t(args.get_int("--max-bytes", 0, 0, int64_t(1) << 50)));
  if (prune) disk.rebuild_manifest();
  r.text = "disk store " + disk.dir() + ": " + counts.text() + "\n" + bad.text +
           (trimmed ? "  trimmed " + u(trimmed) + " least recently used entries\n" : "");
  r.json = "{\"dir\": " + dir + ", \"kinds\": " + counts.json() + ", \"bad\": [" + bad.json + "]" +
           (prune ? ", \"trimmed\": " + u(trimmed) : "") + "}";
  if (prune) r.all_valid = true;
  return r;
}

Report remote_report(const std::string& action, RedisStore& remote, const Args& args) {
  Report r;
  const std::string url = json_string(remote.location());
  const std::vector<RedisStore::Listed> listed = remote.list();  // Error(Io) when unreachable
  const std::string prefix = remote.name_prefix();
  if (action == "stats" || action == "ls") {
    uint64_t bytes = 0, mine = 0, mine_bytes = 0;
    Listing list;
    for (const RedisStore::Listed& l : listed) {
      bytes += l.bytes;
      if (l.name.rfind(prefix, 0) == 0) ++mine, mine_bytes += l.bytes;
      list.add(l.name + "  " + u(l.bytes), "{\"name\": " + json_string(l.name) + ", \"bytes\": " + u(l.bytes) + "}");
    }
    r.text = "remote store " + remote.location() + ": " + u(listed.size()) + " entries, " + u(bytes) + " bytes; " +
             u(mine) + " of them (" + u(mine_bytes) + " bytes) for this fusor (" + prefix + "*)" +
             (remote.enabled() ? "" : "; not usable by engines: " + remote.reason_disabled()) + "\n" +
             (action == "ls" ? list.text : "");
    r.json = "{\"url\": " + url + ", \"enabled\": " + (remote.enabled() ? "true" : "false") +
             ", \"entries\": " + u(listed.size()) + ", \"bytes\": " + u(bytes) + ", \"this_version_entries\": " + u(mine) +
             ", \"this_version_bytes\": " + u(mine_bytes) + (action == "ls" ? ", \"list\": [" + list.json + "]" : "") + "}";
    return r;
  }
  // verify and prune judge tags: without a usable key they cannot.
  FUSOR_CHECK(remote.enabled() || args.has("--all"), Io, remote.reason_disabled());
  const bool prune = action == "prune";
  KindCounts counts;
  std::vector<std::string> doomed;
  Listing bad;
  for (const RedisStore::Listed& l : listed) {
    const std::string kind = prune && args.has("--all") ? "removed" : remote.check(l.name);
    ++counts.n[kind];
    if (kind == "valid" || kind == "missing") continue;
    doomed.push_back(l.name);
    if (kind == "removed") continue;
    r.all_valid = false;
    bad.add(l.name + "  " + kind, "{\"name\": " + json_string(l.name) + ", \"kind\": " + json_string(kind) + "}");
  }
  uint64_t removed = prune ? remote.remove(doomed) : 0;
  r.text = "remote store " + remote.location() + ": " + counts.text() + "\n" + bad.text +
           (prune ? "  removed " + u(removed) + " entries\n" : "");
  r.json = "{\"url\": " + url + ", \"kinds\": " + counts.json() + ", \"bad\": [" + bad.json + "]" +
           (prune ? ", \"removed\": " + u(removed) : "") + "}";
  if (prune) r.all_valid = true;
  return r;
}

}  // namespace

const char* const kStoreUsage = kStoreUsageText.c_str();

int cmd_store(int argc, char** argv) {
  std::vector<std::string> valued{"--max-bytes"};
  valued.insert(valued.end(), kCacheValued.begin(), kCacheValued.end());
  Args args = Args::parse(argc, argv, 2, valued, {"--no-disk-cache", "--all", "--json"});
  if (args.positional.size() != 1) throw UsageError{"expected one action: stats, ls, verify or prune"};
  const std::string action = args.positional[0];
  if (action != "stats" && action != "ls" && action != "verify" && action != "prune")
    throw UsageError{"unknown action '" + action + "': expected stats, ls, verify or prune"};
  if ((args.has("--all") || args.has("--max-bytes")) && action != "prune")
    throw UsageError{"--all and --max-bytes are for prune"};
  EngineOptions options;
  apply_cache_flags(args, &options);
  if (!options.disk_cache && options.remote_store.empty())
    throw UsageError{"--no-disk-cache leaves no store: add --remote URL"};

  std::vector<Report> reports;
  if (options.disk_cache) {
    DiskStore::Options o;
    o.dir = options.cache_dir;
    o.warn = [](const std::string& w) { std::fprintf(stderr, "fusor store: warning: %s\n", w.c_str()); };
    DiskStore disk = DiskStore::open(o);
    reports.push_back(disk_report(action, disk, args));
  }
  if (!options.remote_store.empty()) {
    std::unique_ptr<RedisStore> remote = RedisStore::open(
        {options.remote_store, options.remote, std::string(),
         [](const std::string& w) { std::fprintf(stderr, "fusor store: warning: %s\n", w.c_str()); }});
    reports.push_back(remote_report(action, *remote, args));
  }
  bool all_valid = true;
  for (const Report& r : reports) all_valid = all_valid && r.all_valid;
  if (args.has("--json")) {
    const bool has_disk = options.disk_cache;
    std::printf("{\"action\": %s, \"engine_version\": %s, \"disk\": %s, \"remote\": %s, \"all_valid\": %s}\n",
                json_string(action).c_str(), json_string(std::string(kFusorVersion)).c_str(),
                has_disk ? reports[0].json.c_str() : "null",
                options.remote_store.empty() ? "null" : reports.back().json.c_str(), all_valid ? "true" : "false");
  } else {
    for (const Report& r : reports) std::printf("%s", r.text.c_str());
  }
  return all_valid ? kOk : kBadInput;
}

}  // namespace fusor::cli
