// The stderr that the build's copy of Debian's libasmjit.a reads (codegen/asmjit/
// CMakeLists.txt renames its one reference to the C library's stderr to this name, so that
// the PIE archive also links into a shared object). Layer: codegen/asmjit.
#include <cstdio>

extern "C" {
// NOLINTNEXTLINE: asmjit reads it as the C library's `FILE* stderr`.
FILE* fusor_asmjit_stderr = stderr;
}
