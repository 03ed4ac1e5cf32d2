// xmlscan: an inventory of an XML catalogue over Debian's pugixml (1.13),
// for the seventh real-program trial of sonde dap
// (bench/dap/REAL-PROGRAMS.md): a tree walker called through a virtual
// function with its node by reference, references to strings, maps and
// vectors as arguments, bools, and the library's own code stepped into.
#include "pugixml.hpp"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

static const char catalogue[] =
	"<catalogue owner='ada'>"
	"<shelf name='math'><book id='1' pages='310'>Analysis</book><book id='2' pages='120'>Sets</book></shelf>"
	"<shelf name='code'><book id='3' pages='452'>Compilers</book><book id='4' pages='88'>Shell</book>"
	"<book id='5' pages='640'>Kernels</book></shelf>"
	"</catalogue>";

struct Tally {
	int books = 0;
	long pages = 0;
	bool sawLong = false;
};

// Walker counts books per shelf; for_each gets each node by reference.
struct Walker : pugi::xml_tree_walker {
	std::map<std::string, Tally> shelves;
	std::vector<std::string> titles;
	int elements = 0;
	const int &limit;

	explicit Walker(const int &lim) : limit(lim) {}

	bool for_each(pugi::xml_node &node) override {
		if (node.type() != pugi::node_element)
			return true;
		elements++;
		bool isBook = std::string(node.name()) == "book"; // @FOREACH
		if (isBook) {
			Tally &t = shelves[node.parent().attribute("name").value()];
			int pages = node.attribute("pages").as_int(); // @PAGES
			t.books++;
			t.pages += pages;
			t.sawLong = t.sawLong || pages > limit;
			titles.push_back(node.child_value());
		}
		return true;
	}
};

// summarize reports one shelf: its name and tally by reference.
static int summarize(const std::string &name, const Tally &t, const std::vector<std::string> &titles, bool &anyLong) {
	double avg = t.books ? double(t.pages) / t.books : 0;
	anyLong = anyLong || t.sawLong;
	std::printf("%-5s %d books, %ld pages, avg %.1f%s\n", name.c_str(), t.books, t.pages, avg, t.sawLong ? " (long)" : ""); // @SUMMARY
	return t.books;
}

int main() {
	pugi::xml_document doc;
	pugi::xml_parse_result res = doc.load_string(catalogue);
	if (!res) {
		std::printf("parse error: %s\n", res.description());
		return 1;
	}
	int limit = 400;
	Walker w(limit);
	doc.traverse(w);
	bool anyLong = false;
	int books = 0;
	for (const auto &kv : w.shelves)
		books += summarize(kv.first, kv.second, w.titles, anyLong);
	std::printf("%d books, %zu titles, %d elements%s\n", books, w.titles.size(), w.elements, anyLong ? ", some long" : "");
	return books == 5 ? 0 : 2;
}
