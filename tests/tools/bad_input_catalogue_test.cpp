// The bad-input catalogue: every kind of input fusor reads (a graph file, an ONNX model, an
// npy input, the persistent store's folder and entries, the command line), given in a
// broken or hostile form through `fusor run`. Each row is one test: the input, what fusor
// must do (an Error code and exit status naming what was wrong, or a warning and a correct
// run), and that the next run of the same shape succeeds (nothing is left poisoned, and
// nothing hangs: every command runs under a timeout). The README's reliability section
// holds the table these rows make; the last test checks it is current, and
// `scripts/update-catalogue.sh` rewrites it from the rows.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/redis_server.h"
#include "tests/support/run_command.h"

namespace fs = std::filesystem;

namespace {

// A row of the table: what the input is, what fusor does with it, and what the next run
// of the same shape does.
struct Row {
  const char* input;
  const char* outcome;
  const char* next;
};

std::vector<Row>& rows() {
  static std::vector<Row> r;
  return r;
}

struct Registered {
  Registered(const char* input, const char* outcome, const char* next) { rows().push_back({input, outcome, next}); }
};

// Registers the row in the table and defines its test. INPUT must not contain commas
// (doctest's filter separator).
#define FUSOR_CAT_CONCAT2(a, b) a##b
#define FUSOR_CAT_CONCAT(a, b) FUSOR_CAT_CONCAT2(a, b)
#define CATALOGUE_ROW(INPUT, OUTCOME, NEXT)                                                \
  static const Registered FUSOR_CAT_CONCAT(row_, __LINE__){INPUT, OUTCOME, NEXT};           \
  TEST_CASE("bad input: " INPUT)

using fusor::test::CommandResult;

// This process's folder of scratch folders, removed at exit.
const fs::path& scratch_root() {
  static const struct Root {
    fs::path path = fs::temp_directory_path() / ("fusor_catalogue_" + std::to_string(getpid()));
    ~Root() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } root;
  return root.path;
}

// A fresh folder for one row.
std::string scratch(const std::string& name) {
  fs::path d = scratch_root() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

// `fusor ARGS`, killed after 60 s (a hang is a failure, not a stuck CI); with `env`
// ("NAME=value ...") in its environment.
CommandResult run_fusor(const std::string& env, const std::string& args) {
  return fusor::test::run_command(env + " timeout 60 " + std::string(FUSOR_BINARY_DIR) + "/tools/fusor/fusor " + args);
}
CommandResult run_fusor(const std::string& args) { return run_fusor("", args); }

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A graph of one JIT kernel over a named dim N.
std::string graph_in(const std::string& dir) {
  const std::string path = dir + "/g.txt";
  std::ofstream(path) << "graph g\ninput x: f32[N, 8]\nc = Mul(x, x)\ny = Relu(c)\noutput y\n";
  return path;
}

// `fusor run` of that graph at N=5 on llvm with its store in dir/store.
std::string run_stored(const std::string& dir) {
  return "run " + graph_in(dir) + " --dim N=5 --backend llvm --cache-dir " + dir + "/store";
}

// A private store key file in dir, 32 bytes of `fill`.
std::string key_file(const std::string& dir, const std::string& name, char fill) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << std::string(32, fill);
  ::chmod(path.c_str(), 0600);
  return path;
}

// `fusor run` of that graph at N=5 on llvm with the remote store of `server` (no disk
// store: the server is the only one), printing the cache statistics.
std::string remote_run(const std::string& dir, const fusor::test::RedisServer& server) {
  return "run " + graph_in(dir) + " --dim N=5 --backend llvm --no-disk-cache --stats --remote '" + server.url() + "'";
}

// The checksum line every good run of that graph prints.
void check_good(const CommandResult& r) {
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(has(r.out, "output y"));
  CHECK(has(r.out, "f32[5, 8]"));
}

// The one entry the store holds after a run.
std::string only_entry(const std::string& dir) {
  std::vector<std::string> e;
  for (const auto& f : fs::directory_iterator(dir + "/store/entries")) e.push_back(f.path().string());
  REQUIRE(e.size() == 1);
  return e[0];
}

// A store entry damaged by `damage`, then the same run twice: a warning naming the entry
// and a correct run, then a clean correct run (the entry was rebuilt).
template <class Damage>
void damaged_entry(const char* name, const std::string& warning, Damage damage) {
  const std::string dir = scratch(name);
  check_good(run_fusor(run_stored(dir)));
  const std::string entry = only_entry(dir);
  damage(entry);
  CommandResult r = run_fusor(run_stored(dir));
  check_good(r);
  CHECK(has(r.out, "warning"));
  CHECK(has(r.out, entry));
  CHECK(has(r.out, warning));
  r = run_fusor(run_stored(dir));
  check_good(r);
  CHECK(!has(r.out, "warning"));
}

// An npy file of `descr` (e.g. "<f4") and `shape` ("(5, 8)") holding `data_bytes` bytes.
void write_npy(const std::string& path, const std::string& descr, const std::string& shape, size_t data_bytes,
               const std::string& header_override = "") {
  std::string header = header_override.empty()
                           ? "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }"
                           : header_override;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  out += std::string(data_bytes, '\0');
  std::ofstream(path, std::ios::binary) << out;
}

// `fusor run` of the graph at N=5 with input x from `npy`; then the same with a good input.
void bad_npy(const std::string& dir, const std::string& npy, const std::string& code, const std::string& detail) {
  CommandResult r = run_fusor("run " + graph_in(dir) + " --dim N=5 --input x=" + npy);
  INFO(r.out);
  CHECK(r.code == 3);
  CHECK(has(r.out, code));
  CHECK(has(r.out, detail));
  const std::string good = dir + "/good.npy";
  write_npy(good, "<f4", "(5, 8)", 5 * 8 * 4);
  check_good(run_fusor("run " + graph_in(dir) + " --dim N=5 --input x=" + good));
}

// `fusor run FILE` fails with exit 3 naming `code` and `detail`; then the good graph runs.
void bad_graph(const std::string& dir, const std::string& file, const std::string& code, const std::string& detail) {
  CommandResult r = run_fusor("run " + file);
  INFO(r.out);
  CHECK(r.code == 3);
  CHECK(has(r.out, code));
  CHECK(has(r.out, detail));
  check_good(run_fusor("run " + graph_in(dir) + " --dim N=5"));
}

}  // namespace

TEST_SUITE("tools/catalogue") {
  // The persistent store (cache/disk_store.h).

  CATALOGUE_ROW("a store entry replaced by a FIFO",
                "warning: not a regular file; the entry is removed and compiled again (opened without blocking: no "
                "hang)",
                "succeeds from the rebuilt entry, without a warning") {
    damaged_entry("fifo", "not a regular file", [](const std::string& e) {
      fs::remove(e);
      REQUIRE(mkfifo(e.c_str(), 0600) == 0);
    });
  }

  CATALOGUE_ROW("a store entry replaced by a directory",
                "warning: not a regular file; the directory is removed and the kernel compiled again",
                "succeeds from the rebuilt entry, without a warning") {
    damaged_entry("dir", "not a regular file", [](const std::string& e) {
      fs::remove(e);
      fs::create_directories(e + "/inner");
    });
  }

  CATALOGUE_ROW("a store entry grown to 64 GiB (sparse)",
                "warning: more than any entry (256 MiB); removed without being read, compiled again",
                "succeeds from the rebuilt entry, without a warning") {
    damaged_entry("huge", "more than any entry", [](const std::string& e) { fs::resize_file(e, uint64_t(64) << 30); });
  }

  CATALOGUE_ROW("a store entry with one byte flipped",
                "warning: checksum mismatch; removed and compiled again",
                "succeeds from the rebuilt entry, without a warning") {
    damaged_entry("flip", "checksum mismatch", [](const std::string& e) {
      std::fstream f(e, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(0, std::ios::end);
      const std::streamoff mid = f.tellg() / 2;
      f.seekg(mid);
      char c = 0;
      f.read(&c, 1);
      f.seekp(mid);
      c = char(c ^ 0x5a);
      f.write(&c, 1);
    });
  }

  CATALOGUE_ROW("a store entry cut to half its size",
                "warning: truncated entry; removed and compiled again",
                "succeeds from the rebuilt entry, without a warning") {
    damaged_entry("cut", "truncated", [](const std::string& e) { fs::resize_file(e, fs::file_size(e) / 2); });
  }

  CATALOGUE_ROW("a store folder that others may write (mode 1777)",
                "warning: the store is refused (others could plant entries) and kernels stay in memory; the run "
                "is correct",
                "succeeds the same way; with `chmod go-w` the store is used") {
    const std::string dir = scratch("sticky");
    const std::string store = dir + "/store";
    fs::create_directories(store);
    REQUIRE(chmod(store.c_str(), 01777) == 0);
    for (int i = 0; i < 2; ++i) {
      CommandResult r = run_fusor(run_stored(dir));
      check_good(r);
      CHECK(has(r.out, "disk cache is off"));
      CHECK(has(r.out, "writable by group or others"));
    }
    CHECK(!fs::exists(store + "/entries"));
    REQUIRE(chmod(store.c_str(), 0700) == 0);
    CommandResult r = run_fusor(run_stored(dir));
    check_good(r);
    CHECK(!has(r.out, "warning"));
  }

  CATALOGUE_ROW("a store folder that already holds other files (--cache-dir /)",
                "warning: not made into a store (nothing is written there); kernels stay in memory; the run is correct",
                "succeeds the same way; the folder is left as it was") {
    const std::string dir = scratch("foreign");
    const std::string store = dir + "/store";
    fs::create_directories(store);
    std::ofstream(store + "/notes.txt") << "mine\n";
    for (int i = 0; i < 2; ++i) {
      CommandResult r = run_fusor(run_stored(dir));
      check_good(r);
      CHECK(has(r.out, "already holds other files"));
    }
    CHECK(!fs::exists(store + "/entries"));
    CHECK(!fs::exists(store + "/manifest"));
  }

  // The remote store (cache/redis_store.h), on a redis-server of the row's own.

  CATALOGUE_ROW("a remote store entry signed with another key",
                "warning once: forged entry; never loaded; the kernel is compiled here and stored again; the run is "
                "correct",
                "succeeds from the re-signed entry, without a warning") {
    auto server = fusor::test::RedisServer::start_or_skip();
    if (!server) return;
    const std::string dir = scratch("remote_forged");
    const std::string ours = key_file(dir, "ours", 'o'), theirs = key_file(dir, "theirs", 't');
    const std::string args = remote_run(dir, *server);
    check_good(run_fusor("FUSOR_STORE_KEY_FILE=" + theirs, args));
    CommandResult r = run_fusor("FUSOR_STORE_KEY_FILE=" + ours, args);
    check_good(r);
    CHECK(has(r.out, "forged entry"));
    CHECK(has(r.out, "1 compiled"));
    r = run_fusor("FUSOR_STORE_KEY_FILE=" + ours, args);
    check_good(r);
    CHECK(!has(r.out, "warning"));
    CHECK(has(r.out, "0 compiled"));
  }

  CATALOGUE_ROW("a remote store whose server is down",
                "warning once: cannot be reached; the run is correct from the local store or a compile (no wait past "
                "the connect timeout)",
                "succeeds the same way; with the server back the remote store is used again") {
    auto server = fusor::test::RedisServer::start_or_skip();
    if (!server) return;
    const std::string dir = scratch("remote_down");
    const std::string key = "FUSOR_STORE_KEY_FILE=" + key_file(dir, "key", 'k');
    const std::string args = remote_run(dir, *server);
    server->kill();
    for (int i = 0; i < 2; ++i) {
      CommandResult r = run_fusor(key, args);
      check_good(r);
      CHECK(has(r.out, "cannot be reached"));
    }
    REQUIRE(server->restart());
    CommandResult r = run_fusor(key, args);
    check_good(r);
    CHECK(!has(r.out, "warning"));
    CHECK(has(r.out, "1 writes"));  // compiled (no disk store here) and written to the server again
  }

  CATALOGUE_ROW("a remote store key file that others may read (mode 0644)",
                "warning: the remote store is refused (whoever reads the key can forge entries; chmod 600 named); the "
                "run is correct",
                "succeeds the same way; with chmod 600 the remote store is used") {
    auto server = fusor::test::RedisServer::start_or_skip();
    if (!server) return;
    const std::string dir = scratch("remote_key_mode");
    const std::string path = key_file(dir, "key", 'k');
    ::chmod(path.c_str(), 0644);
    const std::string args = remote_run(dir, *server);
    CommandResult r = run_fusor("FUSOR_STORE_KEY_FILE=" + path, args);
    check_good(r);
    CHECK(has(r.out, "chmod 600"));
    CHECK(has(r.out, "disabled"));
    ::chmod(path.c_str(), 0600);
    r = run_fusor("FUSOR_STORE_KEY_FILE=" + path, args);
    check_good(r);
    CHECK(!has(r.out, "warning"));
    CHECK(!has(r.out, "disabled"));
  }

  CATALOGUE_ROW("a malformed remote store URL (--remote redis://host:port)",
                "InvalidArgument (exit 3) naming the part that is wrong (the port)", "a good URL runs") {
    auto server = fusor::test::RedisServer::start_or_skip();
    if (!server) return;
    const std::string dir = scratch("remote_url");
    CommandResult r = run_fusor("", "run " + graph_in(dir) + " --dim N=5 --no-disk-cache --remote redis://host:port");
    INFO(r.out);
    CHECK(r.code == 3);
    CHECK(has(r.out, "InvalidArgument"));
    CHECK(has(r.out, "the port 'port' is not a number"));
    check_good(run_fusor("FUSOR_STORE_KEY_FILE=" + key_file(dir, "key", 'k'), remote_run(dir, *server)));
  }

  // Graph files: the text format and ONNX.

  CATALOGUE_ROW("a graph file that does not exist", "Io (exit 3) naming the path", "a good graph runs") {
    const std::string dir = scratch("missing");
    bad_graph(dir, dir + "/nope.txt", "Io", dir + "/nope.txt");
  }

  CATALOGUE_ROW("a graph file that is a FIFO", "Io (exit 3): not a regular file (never opened for reading: no hang)",
                "a good graph runs") {
    const std::string dir = scratch("graph_fifo");
    REQUIRE(mkfifo((dir + "/g.fifo").c_str(), 0600) == 0);
    bad_graph(dir, dir + "/g.fifo", "Io", "not a regular file");
  }

  CATALOGUE_ROW("a text graph with a syntax error", "ParseError (exit 3) with file:line:column and what was expected",
                "a good graph runs") {
    const std::string dir = scratch("syntax");
    std::ofstream(dir + "/bad.txt") << "graph g\ninput x: f32[4]\ny = Relu(x\noutput y\n";
    bad_graph(dir, dir + "/bad.txt", "ParseError", "bad.txt:3:");
  }

  CATALOGUE_ROW("Conv pads near INT64_MAX",
                "InvalidGraph (exit 3) naming the node and the attribute (every window size is overflow-checked)",
                "a good graph runs") {
    const std::string dir = scratch("pads");
    std::ofstream(dir + "/conv.txt") << "graph g\ninput x: f32[1, 1, 8, 8]\nconst w: f32[1, 1, 3, 3] = fill(1.0)\n"
                                        "y = Conv(x, w) {pads=[0, 0, 9223372036854775807, 0]}\noutput y\n";
    bad_graph(dir, dir + "/conv.txt", "InvalidGraph", "node 'y' (Conv): pads");
  }

  CATALOGUE_ROW("an ONNX model cut short", "ParseError (exit 3): not an ONNX model (truncated or corrupt)",
                "a good graph runs") {
    const std::string dir = scratch("onnx_cut");
    std::ifstream in(std::string(FUSOR_SOURCE_DIR) + "/tests/onnx/models/bert_ts/model.onnx", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    REQUIRE(bytes.size() > 4000);
    std::ofstream(dir + "/cut.onnx", std::ios::binary) << bytes.substr(0, 3001);
    bad_graph(dir, dir + "/cut.onnx", "ParseError", "not an ONNX model");
  }

  CATALOGUE_ROW("a named dim left unbound", "InvalidArgument (exit 3) naming the dim and the input",
                "the run with --dim N=5 succeeds") {
    const std::string dir = scratch("unbound");
    CommandResult r = run_fusor("run " + graph_in(dir));
    INFO(r.out);
    CHECK(r.code == 3);
    CHECK(has(r.out, "InvalidArgument"));
    CHECK(has(r.out, "dimension 'N' of input 'x' is not bound"));
    check_good(run_fusor("run " + graph_in(dir) + " --dim N=5"));
  }

  // Inputs (--input NAME=FILE.npy).

  CATALOGUE_ROW("an npy input whose data is cut short",
                "ParseError (exit 3) naming the file: the bytes it holds and the bytes its header declares",
                "a good input of the same shape runs") {
    const std::string dir = scratch("npy_short");
    write_npy(dir + "/x.npy", "<f4", "(5, 8)", 5 * 8 * 4 - 17);
    bad_npy(dir, dir + "/x.npy", "ParseError", "holds 143 bytes of data but its header declares f32[5, 8] (160 bytes)");
  }

  CATALOGUE_ROW("an npy input with a garbled header", "ParseError (exit 3) naming the file and where the header breaks",
                "a good input of the same shape runs") {
    const std::string dir = scratch("npy_header");
    write_npy(dir + "/x.npy", "", "", 160, "{'descr': <f4 'shape': ((((");
    bad_npy(dir, dir + "/x.npy", "ParseError", "malformed header");
  }

  CATALOGUE_ROW("an npy input of the wrong dtype", "DTypeMismatch (exit 3) naming the input and both dtypes",
                "a good input of the same shape runs") {
    const std::string dir = scratch("npy_dtype");
    write_npy(dir + "/x.npy", "<i4", "(5, 8)", 5 * 8 * 4);
    bad_npy(dir, dir + "/x.npy", "DTypeMismatch", "'x'");
  }

  CATALOGUE_ROW("an npy input of the wrong shape", "ShapeMismatch (exit 3) naming the input and both shapes",
                "a good input of the same shape runs") {
    const std::string dir = scratch("npy_shape");
    write_npy(dir + "/x.npy", "<f4", "(5, 9)", 5 * 9 * 4);
    bad_npy(dir, dir + "/x.npy", "ShapeMismatch", "'x'");
  }

  CATALOGUE_ROW("an npy input that is a FIFO", "Io (exit 3): not a regular file (no hang)",
                "a good input of the same shape runs") {
    const std::string dir = scratch("npy_fifo");
    REQUIRE(mkfifo((dir + "/x.npy").c_str(), 0600) == 0);
    bad_npy(dir, dir + "/x.npy", "Io", "not a regular file");
  }

  // The command line and the machine.

  CATALOGUE_ROW("--save into a folder that cannot be made", "Io (exit 3) naming the folder", "--save into a folder "
                "that can be made succeeds") {
    const std::string dir = scratch("save");
    std::ofstream(dir + "/file") << "x";
    CommandResult r = run_fusor("run " + graph_in(dir) + " --dim N=5 --save " + dir + "/file/out");
    INFO(r.out);
    CHECK(r.code == 3);
    CHECK(has(r.out, "Io"));
    CHECK(has(r.out, dir + "/file/out"));
    check_good(run_fusor("run " + graph_in(dir) + " --dim N=5 --save " + dir + "/out"));
    CHECK(fs::exists(dir + "/out/y.npy"));
  }

  CATALOGUE_ROW("--threads beyond 1024", "usage error (exit 2) naming the range", "--threads 2 runs") {
    const std::string dir = scratch("threads");
    CommandResult r = run_fusor("run " + graph_in(dir) + " --dim N=5 --threads 100000");
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(has(r.out, "[0, 1024]"));
    check_good(run_fusor("run " + graph_in(dir) + " --dim N=5 --threads 2"));
  }

  CATALOGUE_ROW("warmup over a --dim range ending at INT64_MAX",
                "OutOfMemory (exit 3): the element count overflows; the range ends (no wrap-around: no endless loop)",
                "a warmup of a small range succeeds") {
    const std::string dir = scratch("warmup");
    CommandResult r = run_fusor("warmup " + graph_in(dir) +
                            " --dim N=9223372036854775806..9223372036854775807 --backend llvm --cache-dir " + dir +
                            "/store");
    INFO(r.out);
    CHECK(r.code == 3);  // not 124, the timeout: it must end by itself
    CHECK(has(r.out, "OutOfMemory"));
    CHECK(has(r.out, "overflows"));
    r = run_fusor("warmup " + graph_in(dir) + " --dim N=1..3 --backend llvm --cache-dir " + dir + "/store");
    INFO(r.out);
    CHECK(r.code == 0);
  }

  CATALOGUE_ROW("--backend cuda on a machine without a GPU",
                "DeviceUnavailable (exit 4) naming what is missing (driver, device or NVRTC)", "the static backend runs") {
    const std::string dir = scratch("cuda");
    CommandResult r = run_fusor("run " + graph_in(dir) + " --dim N=5 --backend cuda --no-disk-cache");
    INFO(r.out);
    if (r.code == 0) {
      MESSAGE("skipped (this machine has a CUDA device: the row's input is not bad here)");
      return;
    }
    CHECK(r.code == 4);
    CHECK(has(r.out, "DeviceUnavailable"));
    check_good(run_fusor("run " + graph_in(dir) + " --dim N=5"));
  }

  // The table in the README is these rows (FUSOR_UPDATE_README=1 rewrites it).
  TEST_CASE("the README's bad-input table is the catalogue's") {
    std::string table = "| input | what fusor does | the next run |\n|---|---|---|\n";
    for (const Row& r : rows()) table += std::string("| ") + r.input + " | " + r.outcome + " | " + r.next + " |\n";
    const std::string readme_path = std::string(FUSOR_SOURCE_DIR) + "/README.md";
    std::ifstream in(readme_path);
    std::string readme((std::istreambuf_iterator<char>(in)), {});
    const std::string begin = "<!-- bad-input catalogue: begin (tests/tools/bad_input_catalogue_test.cpp) -->\n";
    const std::string end = "<!-- bad-input catalogue: end -->";
    const size_t b = readme.find(begin), e = readme.find(end);
    REQUIRE_MESSAGE(b != std::string::npos, "README.md lacks the marker " << begin);
    REQUIRE(e != std::string::npos);
    REQUIRE(e > b);
    const std::string current = readme.substr(b + begin.size(), e - b - begin.size());
    if (current == table) return;
    if (const char* u = std::getenv("FUSOR_UPDATE_README"); u && std::string(u) == "1") {
      readme.replace(b + begin.size(), e - b - begin.size(), table);
      std::ofstream(readme_path) << readme;
      MESSAGE("README.md: the bad-input table rewritten");
      return;
    }
    FAIL("README.md's bad-input table is not the catalogue's: run scripts/update-catalogue.sh\n" << table);
  }
}
