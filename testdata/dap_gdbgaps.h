// A class with a key function (its first non-inline virtual function,
// defined in dap_gdbgaps_base.cc): GCC describes it only in that unit, so
// dap_gdbgaps.cc sees it as a declaration (pugixml's xml_tree_walker).
struct Walker {
	virtual ~Walker();
	virtual bool visit(int v);
	int depth = 2;
};
