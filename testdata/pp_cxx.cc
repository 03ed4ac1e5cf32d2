// pp_cxx: libstdc++ containers and smart pointers at one stop, for
// comparing sonde's container summaries with gdb's pretty-printers.
#include <array>
#include <deque>
#include <forward_list>
#include <queue>
#include <stack>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

struct Point {
	int x, y;
};

static void stop_here(int n) { asm volatile("" ::"r"(n)); }

int main() {
	std::map<int, std::string> m{{1, "one"}, {2, "two"}, {3, "three"}};
	std::map<std::string, Point> mp{{"a", {1, 2}}, {"b", {3, 4}}};
	std::map<int, int> m_empty;
	std::set<int> s{5, 3, 9, 1};
	std::multiset<int> ms{2, 2, 7};
	std::unordered_map<int, int> um{{1, 10}, {2, 20}, {3, 30}};
	std::unordered_set<std::string> us{"x", "yy"};
	std::list<int> l{4, 5, 6};
	std::list<std::string> l_empty;
	std::deque<int> dq;
	for (int i = 0; i < 130; i++)
		dq.push_back(i);
	dq.pop_front();
	std::unique_ptr<int> up(new int(42));
	std::unique_ptr<Point> up_pt(new Point{7, 8});
	std::unique_ptr<int> up_null;
	std::shared_ptr<Point> sp = std::make_shared<Point>(Point{5, 6});
	std::shared_ptr<Point> sp2 = sp;
	std::weak_ptr<Point> wp = sp;
	std::shared_ptr<int> sp_null;
	std::optional<int> opt = 5;
	std::optional<std::string> opt_none;
	std::string_view sv = "hello, view";
	std::array<int, 4> arr{1, 2, 3, 4};
	std::pair<int, std::string> pr{9, "nine"};
	const std::string &sref = pr.second;
	void *vp = &pr;
	const char *utf = "caf\xc3\xa9 \xff";
	std::tuple<int, double, std::string> tp{1, 2.5, "tup"};
	std::vector<int> v{1, 2, 3};
	std::vector<bool> vb{true, false, true};
	auto m_it = m.find(2);
	auto l_it = l.begin();
	auto v_it = v.begin() + 1;
	auto um_it = um.find(3);
	std::vector<int> *pv = &v;
	std::map<int, std::string> *pm = &m;
	std::map<int, std::string>::iterator m_none;
	std::forward_list<int> fl{8, 9};
	std::forward_list<int> fl_empty;
	std::stack<int> st;
	st.push(1);
	st.push(2);
	std::queue<std::string> q;
	q.push("first");
	stop_here(m.size() + mp.size() + s.size() + ms.size() + um.size() + us.size() + l.size() + l_empty.size() + dq.size() +
	          *up + up_pt->x + (up_null ? 1 : 0) + sp->x + sp2.use_count() + wp.use_count() + (sp_null ? 1 : 0) + *opt +
	          opt_none.has_value() + sv.size() + sref.size() + (vp != nullptr) + (utf[0] == 'c') + pv->size() + pm->size() + arr[0] + pr.first + std::get<0>(tp) + v[0] + vb[0] + m_empty.size() + m_it->first +
	          *l_it + *v_it + um_it->second + (m_none == m.end()) +
	          fl.front() + fl_empty.empty() + st.top() + q.size());
	return 0;
}
