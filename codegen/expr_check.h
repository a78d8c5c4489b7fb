// The checks every backend runs on a KernelSpec's expression graphs before emitting them:
// well-formed nodes, accesses and stores, and only the dtypes the x86 emitters have a form
// for. One place, so the backends accept and decline the same graphs. Layer: codegen.
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel_spec.h"

namespace fusor {

/// How many arguments a ScalarOp takes (0 to 3).
int scalar_op_arity(ScalarOp op);

/// What a graph may hold where it is used.
struct ExprRules {
  bool acc = false;          ///< Acc nodes are allowed
  bool row_stat = false;     ///< RowStat nodes (value 0 or 1) are allowed
  bool stores = true;        ///< stores are allowed
  bool bool_stores = false;  ///< bool values may be stored (and be the last node)
};

/// Whether the nodes, accesses and stores of `g` over an index space of rank `rank` are
/// well formed and take only what the emitters have a form for: f32 values, and bool values
/// (bool loads, comparisons, logic, casts to bool) used as Where conditions, by logic, by
/// casts and (where rules.bool_stores) stored; every node's arguments of the types its op
/// takes (Note [Expression types] in expr_check.cpp); Acc / RowStat only where allowed;
/// stores only to output buffers. Counts each buffer's loads into reads[] and stores into writes[]
/// (sized like spec.buffers). When not, *why (if given) says why, prefixed by `what`.
bool check_expr(const KernelSpec& spec, const ExprGraph& g, size_t rank, const ExprRules& rules, const std::string& what,
                std::vector<int>& reads, std::vector<int>& writes, std::string* why);

/// A kernel's outputs never alias its inputs (fusor's arena gives values live at once
/// disjoint memory) and the emitters rely on it (noalias pointers; a vector step reads all
/// its inputs before it stores): false, with *why naming the buffer, when a buffer is both
/// read and written or written through two accesses (counts as check_expr gives them).
bool check_buffer_use(const std::vector<int>& reads, const std::vector<int>& writes, std::string* why);

}  // namespace fusor
