// Test program for symbols: a static function in a namespace. GCC gives it
// no DW_AT_linkage_name; its ELF symbol is mangled (_ZN2nsL6helperEi).
// gdb names it from DWARF (ns::helper(int); bt: ns::helper).
namespace ns {
static int __attribute__((noinline)) helper(int x) { return x * 3 + 1; }
} // namespace ns

int main(int argc, char **) { return ns::helper(argc) == 4 ? 0 : 1; }
