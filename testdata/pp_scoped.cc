// pp_scoped: enumerators of enums declared in classes and namespaces
// (printed qualified, as gdb does) and std::variant, std::bitset, std::any
// at one stop.
#include <any>
#include <bitset>
#include <string>
#include <variant>
#include <vector>

enum class Top { A, B };
enum Plain { P0, P1 };
namespace geo {
enum class Mode { Off, On };
enum Flat { F0, F1 };
namespace {
enum Anon { N0, N1 };
}
}  // namespace geo
struct Plan {
	enum Want { kWantNothing, kWantToStart };
	Want w;
	struct In {
		enum class Deep { D0, D1 };
	};
};
template <typename T>
struct Box {
	enum K { K0, K1 };
	K k;
	T t;
};
enum Flags { FA = 1, FB = 2, FC = 4 };
namespace geo {
enum NFlags { NA = 1, NB = 2 };
}

__attribute__((noinline)) int stop_here(int x) { return x; }

int main() {
	Top t = Top::B;
	Plain p = P1;
	geo::Mode m = geo::Mode::On;
	geo::Flat f = geo::F1;
	geo::Anon an = geo::N1;
	Plan pl;
	pl.w = Plan::kWantToStart;
	Plan::In::Deep d = Plan::In::Deep::D1;
	Box<int> bx{Box<int>::K1, 3};
	Flags fl = Flags(FA | FC);
	geo::NFlags nf = geo::NFlags(geo::NA | geo::NB);
	std::variant<int, std::string> v1 = std::string("x");
	std::variant<int, std::string> v0 = 5;
	std::variant<int, Plan> vp = Plan{Plan::kWantNothing};
	std::variant<std::vector<int>, int> vv = std::vector<int>{1, 2};
	std::bitset<10> bs;
	bs.set(1);
	bs.set(8);
	std::bitset<100> big;
	big.set(0);
	big.set(70);
	std::bitset<8> none;
	std::any a1 = 5;
	std::any a0;
	return stop_here((int)t + p + (int)m + f + an + pl.w + (int)d + bx.k + fl + nf + (int)v1.index() + (int)v0.index() +
	                 (int)vp.index() + (int)vv.index() + (int)bs.count() + (int)big.count() + (int)none.count() + a1.has_value() + a0.has_value());
}
