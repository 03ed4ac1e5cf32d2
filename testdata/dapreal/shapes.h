// shapes.h: a small class hierarchy and a template container, as a real
// C++ program's header holds them (debugged through sonde dap by
// testdata/dapclient/realprog.js; lines are found by their @ markers).
#pragma once
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace geo {

struct Point {
	double x, y;
};

class Shape {
public:
	explicit Shape(std::string name) : name_(std::move(name)) {}
	virtual ~Shape() = default;
	virtual double area() const = 0;
	const std::string &name() const { return name_; }

protected:
	std::string name_;
	int id_ = 0;
};

class Circle : public Shape {
public:
	Circle(Point c, double r) : Shape("circle"), center_(c), radius_(r) {}
	double area() const override;

private:
	Point center_;
	double radius_;
};

class Rect : public Shape {
public:
	Rect(Point lo, Point hi) : Shape("rect"), lo_(lo), hi_(hi) {}
	double area() const override;

private:
	Point lo_, hi_;
};

// Stack is a template: a breakpoint on a line of push has one location per
// instantiation.
template <typename T>
class Stack {
public:
	void push(const T &v) {
		items_.push_back(v); // @TPL_PUSH
	}
	T pop() {
		if (items_.empty())
			throw std::out_of_range("pop of an empty Stack"); // @TPL_THROW
		T v = items_.back();
		items_.pop_back();
		return v;
	}
	size_t size() const { return items_.size(); }

private:
	std::vector<T> items_;
};

// Inventory counts shapes by name.
struct Inventory {
	std::map<std::string, int> counts;
	std::vector<std::unique_ptr<Shape>> shapes;
	char label[16];
	int grid[3][4];
	double total_area = 0;

	void add(std::unique_ptr<Shape> s);
	int count(const std::string &name) const;
};

} // namespace geo
