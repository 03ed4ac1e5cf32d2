// fmtreport: a small report printer over Debian's fmt (libfmt 9), for the
// sixth real-program trial of sonde dap and sonde perf
// (bench/dap/REAL-PROGRAMS.md). A user type with its own formatter, named
// arguments, a memory_buffer, ranges, dynamic argument stores, a table of
// formatting functions through function pointers.
//
//	fmtreport [ROUNDS]   (ROUNDS > 1: format that many reports, for perf)
//	fmtreport --crash    (calls a null Renderer)
#include <fmt/args.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

enum class Unit { Bytes, Kilo, Mega };

struct Sample {
	std::string name;
	double value;
	Unit unit;
	unsigned flags : 3;
	unsigned level : 5;
};

template <> struct fmt::formatter<Sample> {
	bool terse = false;
	constexpr auto parse(format_parse_context &ctx) -> decltype(ctx.begin()) {
		auto it = ctx.begin();
		if (it != ctx.end() && *it == 't') {
			terse = true; // @PARSE
			++it;
		}
		return it;
	}
	template <typename Ctx> auto format(const Sample &s, Ctx &ctx) const -> decltype(ctx.out()) {
		static const char *units[] = {"B", "KiB", "MiB"};
		if (terse)
			return fmt::format_to(ctx.out(), "{}={:.1f}", s.name, s.value);
		return fmt::format_to(ctx.out(), "{:<8} {:>10.3f} {} [{:#x}/{}]", s.name, s.value, // @FORMAT
			units[static_cast<int>(s.unit)], s.flags, s.level);
	}
};

using Renderer = std::string (*)(const std::vector<Sample> &, int);

static std::string render_table(const std::vector<Sample> &rows, int width) {
	fmt::memory_buffer out;
	for (const auto &r : rows)
		fmt::format_to(std::back_inserter(out), "|{:^{}}|{}\n", r.name, width, r); // @TABLE
	return fmt::to_string(out);
}

static std::string render_terse(const std::vector<Sample> &rows, int) {
	return fmt::format("{:t}", fmt::join(rows, ", "));
}

static std::string render_named(const std::vector<Sample> &rows, int width) {
	fmt::dynamic_format_arg_store<fmt::format_context> store;
	store.push_back(fmt::arg("count", rows.size()));
	store.push_back(fmt::arg("width", width));
	store.push_back(fmt::arg("first", rows.front().name));
	return fmt::vformat("{count} rows, {width} wide, first {first}", store); // @NAMED
}

struct Report {
	const char *title;
	Renderer render;
	int width;
};

int main(int argc, char **argv) {
	bool crash = argc > 1 && std::string(argv[1]) == "--crash";
	long rounds = argc > 1 && !crash ? std::atol(argv[1]) : 1;
	std::vector<Sample> rows = {
		{"alpha", 1.5, Unit::Bytes, 5, 17},
		{"beta", 2048.25, Unit::Kilo, 2, 3},
		{"gamma", 3.0e6, Unit::Mega, 7, 31},
	};
	std::map<std::string, int> seen = {{"alpha", 1}, {"beta", 2}, {"gamma", 3}};
	Report reports[] = {{"table", render_table, 9}, {"terse", render_terse, 0}, {"named", render_named, 12}};
	if (crash)
		reports[1].render = nullptr; // a call through a null function pointer: SIGSEGV at pc 0
	size_t total = 0;
	for (long i = 0; i < rounds; i++) {
		rows[0].value = 1.5 + static_cast<double>(i % 1000);
		for (const Report &rep : reports) {
			std::string text = rep.render(rows, rep.width); // @RENDER
			total += text.size();
			if (rounds == 1)
				fmt::print("== {} ==\n{}\n", rep.title, text);
		}
	}
	fmt::print("{} {}\n", seen, total);
	return 0;
}
