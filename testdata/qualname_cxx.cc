// qualname_cxx: C++ types whose qualified names come from their DIE's
// ancestors in every way GCC spells them, for variables' qualified-name
// tests (TestQualifiedOfMatchesIndex): namespaces nested and anonymous,
// classes in classes, a nested class defined outside its class
// (DW_AT_specification), types local to a function (not qualified),
// enums and typedefs in namespaces, templates, base classes.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace outer {
namespace inner {
struct Leaf {
	int v;
};
typedef Leaf LeafAlias;
enum class Colour { red, green };
} // namespace inner

class Host {
public:
	struct Nested; // defined below, outside the class
	struct Inline {
		enum Mode { on, off } mode;
	};
	Inline in;
	Nested *nested;
};

struct Host::Nested : inner::Leaf {
	struct Deeper {
		long d;
	} deeper;
};

template <typename T> struct Box : std::allocator<T> {
	T item;
};
} // namespace outer

namespace {
struct Hidden {
	outer::Box<int> box;
};
} // namespace

struct Top {
	std::string name;
	std::vector<int> values;
	std::map<int, std::string> byId;
	std::shared_ptr<outer::Host> host;
};

int use(Top *t)
{
	struct Local {
		int x;
	} local = {1};
	outer::Host::Nested n{};
	n.v = local.x;
	outer::inner::LeafAlias leaf{2};
	Hidden h{};
	h.box.item = leaf.v;
	outer::inner::Colour c = outer::inner::Colour::green;
	outer::Host::Inline in{outer::Host::Inline::off};
	return n.v + h.box.item + int(c) + int(in.mode) + int(t->values.size()) + int(t->name.size()) + int(t->byId.size());
}

int main()
{
	Top t{"top", {1, 2}, {{1, "one"}}, std::make_shared<outer::Host>()};
	return use(&t) == 0;
}
