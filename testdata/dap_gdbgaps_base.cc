// Walker's key function: its definition's DWARF is in this unit only.
#include "dap_gdbgaps.h"

Walker::~Walker() {}

bool Walker::visit(int v) { return v > depth; }
